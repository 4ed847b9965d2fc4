package reactor

import (
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// BenchmarkRoundTrip sends b.N one-line requests over loopback through each
// mode's reactor, from 1 or 50 connections with one request in flight each,
// and reports the process's allocations per request (the client side
// allocates nothing once connected), so it measures what the reactor costs
// per request: hand-off, wake-ups and writes. Compare modes with each other
// in one run; ns/op includes the client and the kernel.
func BenchmarkRoundTrip(b *testing.B) {
	for _, v := range variants {
		for _, conns := range []int{1, 50} {
			b.Run(fmt.Sprintf("%s/conns=%d", v.name, conns), func(b *testing.B) {
				srv := startTest(b, v.mode, v.mod)
				clients := make([]net.Conn, conns)
				for i := range clients {
					c, err := net.Dial("tcp", srv.Addr().String())
					if err != nil {
						b.Fatal(err)
					}
					defer c.Close()
					_ = c.SetDeadline(time.Now().Add(5 * time.Minute))
					clients[i] = c
				}
				req, want := []byte("k\n"), "R:k\n"
				b.ReportAllocs()
				b.ResetTimer()
				var wg sync.WaitGroup
				errs := make(chan error, conns)
				for i, c := range clients {
					n := b.N / conns
					if i < b.N%conns {
						n++
					}
					wg.Add(1)
					go func(c net.Conn, n int) {
						defer wg.Done()
						got := make([]byte, len(want))
						for j := 0; j < n; j++ {
							if _, err := c.Write(req); err != nil {
								errs <- err
								return
							}
							if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
								errs <- fmt.Errorf("reply %q: %v", got, err)
								return
							}
						}
					}(c, n)
				}
				wg.Wait()
				b.StopTimer()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
			})
		}
	}
}
