package loadgen

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeServer is a minimal in-test memcached: get, set, flush_all, version.
type fakeServer struct {
	ln      net.Listener
	corrupt bool // flip the first byte of every value returned
	silent  bool // read requests, never answer
	mu      sync.Mutex
	data    map[string][]byte // guarded by mu
	wg      sync.WaitGroup
}

func startFake(t *testing.T, corrupt, silent bool) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{ln: ln, corrupt: corrupt, silent: silent, data: map[string][]byte{}}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(func() {
		ln.Close()
		f.wg.Wait()
	})
	return f
}

func (f *fakeServer) addr() string { return f.ln.Addr().String() }

func (f *fakeServer) accept() {
	defer f.wg.Done()
	var conns sync.WaitGroup
	var open []net.Conn
	for {
		c, err := f.ln.Accept()
		if err != nil {
			break
		}
		open = append(open, c)
		conns.Add(1)
		go func() {
			defer conns.Done()
			defer c.Close()
			f.serve(c)
		}()
	}
	for _, c := range open {
		c.Close()
	}
	conns.Wait()
}

func (f *fakeServer) serve(c net.Conn) {
	r := bufio.NewReader(c)
	w := bufio.NewWriter(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		tok := strings.Fields(line)
		if len(tok) == 0 {
			continue
		}
		var out string
		switch tok[0] {
		case "get":
			f.mu.Lock()
			v, ok := f.data[tok[1]]
			f.mu.Unlock()
			if ok {
				if f.corrupt && len(v) > 0 {
					v = append([]byte(nil), v...)
					v[0] ^= 0xff
				}
				out = "VALUE " + tok[1] + " 0 " + strconv.Itoa(len(v)) + "\r\n" + string(v) + "\r\nEND\r\n"
			} else {
				out = "END\r\n"
			}
		case "set":
			n, _ := strconv.Atoi(tok[4])
			buf := make([]byte, n+2)
			if _, err := io.ReadFull(r, buf); err != nil {
				return
			}
			f.mu.Lock()
			f.data[tok[1]] = buf[:n]
			f.mu.Unlock()
			out = "STORED\r\n"
		case "flush_all":
			f.mu.Lock()
			f.data = map[string][]byte{}
			f.mu.Unlock()
			out = "OK\r\n"
		case "version":
			out = "VERSION 1.0.0\r\n"
		default:
			out = "ERROR\r\n"
		}
		if f.silent {
			continue
		}
		w.WriteString(out)
		if r.Buffered() == 0 {
			if w.Flush() != nil {
				return
			}
		}
	}
}
