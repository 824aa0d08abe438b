package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// stormClientsPerSlot is the storm's clients per server slot: issue #43
// row 8 saw goodput halve with wrk at 32 × --parallel.
const stormClientsPerSlot = 32

// stormTarget is the share of the polite clients' goodput the storm must
// leave (issue #43's "done when").
const stormTarget = 0.8

// phase is what one set of clients achieved in a phase of the storm run.
type phase struct {
	Retry         string         `json:"retry"` // "honoured" or "ignored"
	Completed     int64          `json:"requests_completed"`
	Refused       int64          `json:"requests_refused"`
	GoodputPerSec float64        `json:"goodput_per_second"`
	RefusedPerSec float64        `json:"refused_per_second"`
	Errors        map[string]int `json:"errors,omitempty"`
}

// stormReport compares the phases.
type stormReport struct {
	Clients     int     `json:"clients"`
	Parallel    int     `json:"parallel,omitempty"`
	DurationSec float64 `json:"duration_seconds_per_phase"`
	Polite      phase   `json:"polite"`
	Storm       phase   `json:"storm"`
	Ratio       float64 `json:"goodput_ratio"`
	Target      float64 `json:"target_ratio"`
}

// runStorm runs the same clients for --duration twice: first honouring
// Retry-After on a 429 (sleeping what it says), then ignoring it (asking
// again at once, as wrk does), and reports the goodput (completed
// requests per second) of each and their ratio. Refusals must be cheap
// enough that the storm leaves the admitted work its CPU.
func runStorm(o options, base string, inProcess bool) error {
	polite := drive(o, base, true)
	storm := drive(o, base, false)
	r := stormReport{Clients: o.clients, DurationSec: o.duration.Seconds(), Polite: polite, Storm: storm, Target: stormTarget}
	if polite.GoodputPerSec > 0 {
		r.Ratio = storm.GoodputPerSec / polite.GoodputPerSec
	}
	if inProcess {
		r.Parallel = o.parallel
	}
	if o.asJSON {
		return printJSON(r)
	}
	fmt.Printf("clients            %d", r.Clients)
	if r.Parallel > 0 {
		fmt.Printf(" (server --parallel %d, in-process)", r.Parallel)
	}
	fmt.Printf("\nduration           %.1f s per phase\n", r.DurationSec)
	for _, p := range []phase{polite, storm} {
		fmt.Printf("Retry-After %-8s %.1f completed/s, %.0f refused/s", p.Retry, p.GoodputPerSec, p.RefusedPerSec)
		for k, n := range p.Errors {
			fmt.Printf(", %s: %d", k, n)
		}
		fmt.Println()
	}
	met := "met"
	if r.Ratio < stormTarget {
		met = "NOT met"
	}
	fmt.Printf("goodput ratio      %.2f of the polite clients' (target ≥ %.2f: %s)\n", r.Ratio, stormTarget, met)
	return nil
}

// drive runs o.clients streaming clients for o.duration; on a 429 or 503
// each waits what Retry-After says when polite, and asks again at once
// when not. The clients are as cheap as wrk's (a kept-alive connection,
// the request rendered into a reused buffer, the answer parsed by
// http.ReadResponse): net/http's client costs several times a refusal,
// and in-process its CPU would be taken from the server.
func drive(o options, base string, polite bool) phase {
	ctx, cancel := context.WithTimeout(context.Background(), o.duration)
	defer cancel()
	var (
		completed, refused atomic.Int64
		mu                 sync.Mutex
		errs               = map[string]int{}
		wg                 sync.WaitGroup
	)
	deadline, _ := ctx.Deadline()
	start := time.Now()
	for c := range o.clients {
		wg.Go(func() {
			cl := &rawClient{addr: strings.TrimPrefix(base, "http://"), deadline: deadline, o: o}
			defer cl.close()
			for i := 0; ctx.Err() == nil; i++ {
				kind, wait := cl.execute(fmt.Sprintf("storm-%d-%d", c, i))
				switch {
				case kind == "":
					completed.Add(1)
					continue
				case ctx.Err() != nil || time.Now().After(deadline):
					continue // the phase ended mid-request
				case kind == "http_429", kind == "http_503":
					refused.Add(1)
				default:
					mu.Lock()
					errs[kind]++
					mu.Unlock()
				}
				if polite && wait > 0 {
					select {
					case <-ctx.Done():
					case <-time.After(wait):
					}
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	p := phase{Retry: "honoured", Completed: completed.Load(), Refused: refused.Load(),
		GoodputPerSec: float64(completed.Load()) / elapsed, RefusedPerSec: float64(refused.Load()) / elapsed,
		Errors: errs}
	if !polite {
		p.Retry = "ignored"
	}
	return p
}

// rawClient sends /execute requests on one kept-alive connection,
// dialled again when the server closes it.
type rawClient struct {
	addr     string
	deadline time.Time
	o        options
	c        net.Conn
	r        *bufio.Reader
	req      []byte
}

// execute sends one /execute request and reads its answer: "" for a
// stream that ended, else the error kind, and a refusal's Retry-After.
func (cl *rawClient) execute(job string) (kind string, wait time.Duration) {
	if cl.c == nil {
		c, err := net.Dial("tcp", cl.addr)
		if err != nil {
			return "transport", 0
		}
		_ = c.SetDeadline(cl.deadline)
		cl.c, cl.r = c, bufio.NewReader(c)
	}
	body := fmt.Sprintf(`{"job_id":%q,"prompt":%q,"max_tokens":%d,"temperature":%g}`, job, cl.o.prompt, cl.o.maxTokens, cl.o.temperature)
	cl.req = fmt.Appendf(cl.req[:0], "POST /execute HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", cl.addr, len(body))
	if cl.o.apiKey != "" {
		cl.req = fmt.Appendf(cl.req, "Authorization: Bearer %s\r\n", cl.o.apiKey)
	}
	cl.req = append(append(cl.req, "\r\n"...), body...)
	if _, err := cl.c.Write(cl.req); err != nil {
		cl.close()
		return "transport", 0
	}
	resp, err := http.ReadResponse(cl.r, nil)
	if err != nil {
		cl.close()
		return "transport", 0
	}
	defer func() {
		if resp.Close {
			cl.close()
		}
	}()
	if resp.StatusCode != http.StatusOK {
		_, err = io.Copy(io.Discard, resp.Body)
		if err != nil {
			cl.close()
		}
		seconds, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return "http_" + strconv.Itoa(resp.StatusCode), time.Duration(seconds) * time.Second
	}
	end := ""
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok && (name == "end" || name == "error") {
			end = name
		}
	}
	if sc.Err() != nil {
		cl.close()
		return "stream_cut", 0
	}
	if end != "end" {
		return "event_" + end, 0
	}
	return "", 0
}

func (cl *rawClient) close() {
	if cl.c != nil {
		cl.c.Close()
		cl.c = nil
	}
}
