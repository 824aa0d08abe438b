package chat

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/ardanlabs/jinja"
)

// Limits bound what rendering one conversation may cost, as jinja2's
// sandbox does for transformers (which caps range at 100,000 items and
// stops recursion with Python's RecursionError). A template comes from
// whoever published the model, so a template that exceeds a limit is an
// error of that render (wrapping ErrLimit), never a crash of the process.
type Limits struct {
	// MaxRange is the most items one range() may return.
	MaxRange int
	// MaxFrames is the deepest the Go stack may be when a macro is entered:
	// recursion (a macro calling itself) stops there with an error instead of overflowing the stack,
	// which is fatal to the whole process.
	MaxFrames int
	// MaxSteps is the most loop iterations plus macro calls of one render.
	MaxSteps int
	// MaxOutput is the most bytes a render may print, counting literal
	// text of loop and macro bodies each time the body is entered.
	MaxOutput int
	// Timeout stops a render that runs longer, checked at every step.
	Timeout time.Duration
}

// DefaultLimits are no real chat template's concern: the templates of
// Qwen, Llama, Mistral and Phi take one step per message and print what
// the conversation holds plus a few hundred bytes per message.
var DefaultLimits = Limits{
	MaxRange:  100_000,
	MaxFrames: 10_000,
	MaxSteps:  1_000_000,
	MaxOutput: 4 << 20,
	Timeout:   10 * time.Second,
}

// ErrLimit is wrapped when a render exceeds one of its Limits.
var ErrLimit = errors.New("chat template exceeds the sandbox's limits")

// guards is the state of one render's guard functions.
type guards struct {
	lim      Limits
	steps    int
	macros   int
	output   int
	deadline time.Time
	pc       [1]uintptr
}

func newGuards(lim Limits) *guards {
	return &guards{lim: lim, deadline: time.Now().Add(lim.Timeout)}
}

// vars are the guard functions and the bounded range, to add to a render's
// variables: a variable shadows the engine's builtin of the same name.
func (g *guards) vars(vars map[string]jinja.Value) {
	vars[guardStep] = jinja.NewCallable(guardStep, g.step)
	vars[guardMacro] = jinja.NewCallable(guardMacro, g.macro)
	vars[guardPrint] = jinja.NewCallable(guardPrint, g.print)
	vars["range"] = jinja.NewCallable("range", g.rangeFn)
}

func (g *guards) step(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	g.steps++
	if g.steps > g.lim.MaxSteps {
		return jinja.Undefined(), fmt.Errorf("%w: more than %d loop iterations and macro calls", ErrLimit, g.lim.MaxSteps)
	}
	if len(args) == 1 && args[0].IsInt() {
		if err := g.charge(int(args[0].AsInt())); err != nil {
			return jinja.Undefined(), err
		}
	}
	if time.Now().After(g.deadline) {
		return jinja.Undefined(), fmt.Errorf("%w: rendering took longer than %v", ErrLimit, g.lim.Timeout)
	}
	return jinja.NewBool(false), nil
}

// macroCheckEvery is how many macro entries pass between two checks of
// the stack's depth: a check walks the stack, so recursion to the limit
// costs the square of its depth, and a few levels past MaxFrames (a
// macro level is about ten frames) overflow nothing.
const macroCheckEvery = 8

// macro is step for a macro's entry, which also checks the stack's depth:
// only a macro calling itself deepens the stack without end (the engine has
// no recursive loops). Loop iterations skip the check, which costs
// microseconds.
func (g *guards) macro(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	g.macros++
	// Callers skipping MaxFrames frames finds one only on a deeper stack;
	// it allocates nothing.
	if g.macros%macroCheckEvery == 0 && runtime.Callers(g.lim.MaxFrames, g.pc[:]) > 0 {
		return jinja.Undefined(), fmt.Errorf("%w: recursion too deep (over %d stack frames; a macro calling itself without end?)", ErrLimit, g.lim.MaxFrames)
	}
	return g.step(args, kwargs)
}

func (g *guards) charge(n int) error {
	g.output += n
	if g.output > g.lim.MaxOutput {
		return fmt.Errorf("%w: output beyond %d bytes", ErrLimit, g.lim.MaxOutput)
	}
	return nil
}

// print counts what a {{ }} prints and returns it unchanged. A list or
// dict is measured by walking it, which also refuses one that contains
// itself: the engine would print it forever.
func (g *guards) print(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Undefined(), fmt.Errorf("%s: want 1 argument, got %d", guardPrint, len(args))
	}
	n, err := g.size(args[0], 0)
	if err != nil {
		return jinja.Undefined(), err
	}
	if err := g.charge(n); err != nil {
		return jinja.Undefined(), err
	}
	return args[0], nil
}

// maxNesting is how deep a printed list or dict may nest.
const maxNesting = 100

// size is about the bytes the engine prints for v.
func (g *guards) size(v jinja.Value, depth int) (int, error) {
	if depth > maxNesting {
		return 0, fmt.Errorf("%w: printed value nests deeper than %d (a list or dict containing itself?)", ErrLimit, maxNesting)
	}
	switch {
	case v.IsString():
		return len(v.AsString()), nil
	case v.IsList():
		n := 2
		for _, it := range v.AsList().Items {
			m, err := g.size(it, depth+1)
			if err != nil {
				return 0, err
			}
			if n += m + 2; n > g.lim.MaxOutput {
				return n, nil
			}
		}
		return n, nil
	case v.IsDict():
		d := v.AsDict()
		n := 2
		for _, k := range d.Keys {
			it, _ := d.Get(k)
			m, err := g.size(it, depth+1)
			if err != nil {
				return 0, err
			}
			if n += len(k) + m + 6; n > g.lim.MaxOutput {
				return n, nil
			}
		}
		return n, nil
	default:
		return 24, nil
	}
}

// rangeFn is Python's range with at most MaxRange items.
func (g *guards) rangeFn(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	var a [3]int64
	for i, v := range args {
		if i >= 3 {
			break
		}
		// The engine's range takes floats as well (10**9 is one).
		switch {
		case v.IsInt():
			a[i] = v.AsInt()
		case v.IsFloat() && math.Abs(v.AsFloat()) < 1<<62:
			a[i] = int64(v.AsFloat())
		default:
			return jinja.Undefined(), fmt.Errorf("range: argument %d is %s, want an integer", i+1, v.String())
		}
	}
	var start, stop, step int64
	switch len(args) {
	case 1:
		stop, step = a[0], 1
	case 2:
		start, stop, step = a[0], a[1], 1
	case 3:
		start, stop, step = a[0], a[1], a[2]
	default:
		return jinja.Undefined(), fmt.Errorf("range: want 1 to 3 arguments, got %d", len(args))
	}
	if step == 0 {
		return jinja.Undefined(), errors.New("range: step must not be zero")
	}
	// The count in float64 cannot overflow as stop-start could.
	count := 0.0
	if (step > 0 && stop > start) || (step < 0 && stop < start) {
		count = (float64(stop) - float64(start)) / float64(step)
	}
	if count > float64(g.lim.MaxRange) {
		return jinja.Undefined(), fmt.Errorf("%w: range of about %.0f items, at most %d", ErrLimit, count, g.lim.MaxRange)
	}
	var items []jinja.Value
	for i := start; len(items) < g.lim.MaxRange && ((step > 0 && i < stop) || (step < 0 && i > stop)); i += step {
		items = append(items, jinja.NewInt(i))
	}
	return jinja.NewList(items), nil
}
