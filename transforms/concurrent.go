package transforms

import (
	"context"
	"runtime"
	"sync"
)

// Concurrent runs the elements of a bundle concurrently inside one DoFn instance. A runner such as
// prism hands a whole fan-out to one bundle, and a Go SDK bundle processes its elements one after
// the other, which would leave every core but one idle. A DoFn that holds a Concurrent starts each
// element's work with Go (which waits for one of the process's slots), emits what Take returns as
// work finishes, and calls Wait in FinishBundle so that a bundle commits only when all its work is
// done. Results must not depend on the order work runs in (seed it by the element alone).
type Concurrent[T any] struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	done   []T
	err    error
}

// Start prepares c; call it from the DoFn's Setup.
func (c *Concurrent[T]) Start() {
	c.ctx, c.cancel = context.WithCancel(context.Background())
}

// Stop cancels work still running and waits for it; call it from Teardown.
func (c *Concurrent[T]) Stop() {
	if c.cancel != nil {
		c.cancel()
	}
	c.wg.Wait()
}

// Wait waits for all the work started.
func (c *Concurrent[T]) Wait() { c.wg.Wait() }

// slots bounds the work running at once in this process, shared by every Concurrent with the
// same bound.
var slots = struct {
	sync.Mutex
	m map[int]chan struct{}
}{m: map[int]chan struct{}{}}

func slotsFor(workers int) chan struct{} {
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	slots.Lock()
	defer slots.Unlock()
	ch := slots.m[workers]
	if ch == nil {
		ch = make(chan struct{}, workers)
		slots.m[workers] = ch
	}
	return ch
}

// Go waits until fewer than workers (GOMAXPROCS when below 1) pieces of work run in this process,
// then runs work on its own goroutine. Its result, or its error, is collected for Take.
func (c *Concurrent[T]) Go(workers int, work func(ctx context.Context) (T, error)) error {
	sl := slotsFor(workers)
	select {
	case sl <- struct{}{}:
	case <-c.ctx.Done():
		return c.ctx.Err()
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() { <-sl }()
		v, err := work(c.ctx)
		c.mu.Lock()
		defer c.mu.Unlock()
		if err != nil {
			if c.err == nil {
				c.err = err
			}
			return
		}
		c.done = append(c.done, v)
	}()
	return nil
}

// Take returns the work finished so far. After a failure it cancels and waits for the rest, and
// returns the first error (c is then ready for the next bundle).
func (c *Concurrent[T]) Take() ([]T, error) {
	c.mu.Lock()
	done, err := c.done, c.err
	c.done, c.err = nil, nil
	c.mu.Unlock()
	if err != nil {
		c.cancel()
		c.wg.Wait()
		c.ctx, c.cancel = context.WithCancel(context.Background())
		return nil, err
	}
	return done, nil
}
