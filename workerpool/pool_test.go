package workerpool

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

type funcTask func()

func (f funcTask) Run() { f() }

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		workers int
		wantErr bool
	}{
		{"zero", 0, true},
		{"negative", -1, true},
		{"one", 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Config{Workers: tc.workers}.Validate()
			if (err != nil) != tc.wantErr {
				t.Fatalf("Validate(workers=%d) = %v, wantErr %v", tc.workers, err, tc.wantErr)
			}
		})
	}
}

func TestSubmitRunsTasks(t *testing.T) {
	p, err := New(Config{Workers: 4, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(time.Second)
	var wg sync.WaitGroup
	var n atomic.Int64
	for i := 0; i < 100; i++ {
		wg.Add(1)
		task := funcTask(func() { n.Add(1); wg.Done() })
		for p.Submit(task) != nil {
			time.Sleep(time.Millisecond)
		}
	}
	wg.Wait()
	if n.Load() != 100 {
		t.Fatalf("ran %d tasks, want 100", n.Load())
	}
}

func TestSubmitOverloadedDoesNotBlock(t *testing.T) {
	p, err := New(Config{Workers: 1, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(time.Second)
	release := make(chan struct{})
	started := make(chan struct{})
	if err := p.Submit(funcTask(func() { close(started); <-release })); err != nil {
		t.Fatal(err)
	}
	<-started
	err = p.Submit(funcTask(func() {}))
	close(release)
	if !errors.Is(err, ErrOverloaded) {
		t.Fatalf("Submit on a full pool = %v, want ErrOverloaded", err)
	}
	if p.Overloads() != 1 {
		t.Fatalf("Overloads() = %d, want 1", p.Overloads())
	}
}

func TestPanicIsRecovered(t *testing.T) {
	p, err := New(Config{Workers: 1, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	if err := p.Submit(funcTask(func() { defer close(done); panic("boom") })); err != nil {
		t.Fatal(err)
	}
	<-done
	deadline := time.Now().Add(2 * time.Second)
	for p.Panics() != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if p.Panics() != 1 {
		t.Fatalf("Panics() = %d, want 1", p.Panics())
	}
	// The pool still works after a panic.
	ran := make(chan struct{})
	for p.Submit(funcTask(func() { close(ran) })) != nil {
		time.Sleep(time.Millisecond)
	}
	<-ran
	if err := p.Release(time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.Submit(funcTask(func() {})); !errors.Is(err, ErrClosed) {
		t.Fatalf("Submit after Release = %v, want ErrClosed", err)
	}
}
