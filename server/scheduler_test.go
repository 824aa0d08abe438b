package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSchedulerAdmission(t *testing.T) {
	var running, queued int
	s := NewScheduler(2, 1, func(r, q int) { running, queued = r, q })
	ctx := context.Background()
	a, err := s.Acquire(ctx)
	require.NoError(t, err)
	b, err := s.Acquire(ctx)
	require.NoError(t, err)
	require.NotSame(t, a, b)
	require.Equal(t, 2, running)

	got := make(chan *Slot)
	go func() {
		sl, err := s.Acquire(ctx)
		require.NoError(t, err)
		got <- sl
	}()
	require.Eventually(t, func() bool { _, q := s.Stats(); return q == 1 }, time.Second, time.Millisecond)
	_, err = s.Acquire(ctx)
	require.ErrorIs(t, err, ErrQueueFull, "2 running + 1 waiting is the limit")

	a.Release() // goes straight to the waiter
	require.Same(t, a, <-got)
	r, q := s.Stats()
	require.Equal(t, [2]int{2, 0}, [2]int{r, q})
	require.Equal(t, 0, queued)
	a.Release()
	b.Release()
	r, _ = s.Stats()
	require.Equal(t, 0, r)
}

func TestSchedulerFIFOAndCancelledWaiter(t *testing.T) {
	s := NewScheduler(1, 3, nil)
	held, _ := s.Acquire(context.Background())
	order := make(chan int, 3)
	ctxGone, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := s.Acquire(ctxGone)
		errs <- err
	}()
	require.Eventually(t, func() bool { _, q := s.Stats(); return q == 1 }, time.Second, time.Millisecond)
	for i := 1; i <= 2; i++ {
		go func() {
			sl, err := s.Acquire(context.Background())
			require.NoError(t, err)
			order <- i
			sl.Release()
		}()
		require.Eventually(t, func() bool { _, q := s.Stats(); return q == i+1 }, time.Second, time.Millisecond)
	}
	cancel()
	require.ErrorIs(t, <-errs, context.Canceled)
	_, q := s.Stats()
	require.Equal(t, 2, q, "a cancelled waiter leaves the queue")
	held.Release()
	require.Equal(t, 1, <-order)
	require.Equal(t, 2, <-order)
	require.Eventually(t, func() bool { r, _ := s.Stats(); return r == 0 }, time.Second, time.Millisecond)
}
