package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestLinearizability runs concurrent clients doing get/gets/set/cas/incr/
// decr/delete/append on a handful of keys, records every operation with its
// call and return times, and checks the history with porcupine against a
// sequential model of one key: 0 violations, per mode. A violation writes
// porcupine's HTML visualization to the test's temp directory (or to
// -tandem.lin.viz, which keeps it).
var (
	linOps = flag.Int("tandem.lin.ops", 500, "operations per client in TestLinearizability (-short: half)")
	linViz = flag.String("tandem.lin.viz", "", "write porcupine's visualization of every checked history to this directory")
)

const (
	linClients = 6
	linKeys    = 3
)

// linInput is one operation's request.
type linInput struct {
	op    string // get, gets, set, cas, incr, decr, delete, append
	key   string
	value string
	delta uint64
	cas   uint64
}

// linOutput is its reply, decoded.
type linOutput struct {
	status string // VALUE, MISS, STORED, NOT_STORED, EXISTS, NOT_FOUND, DELETED, NUM, NONNUM
	value  string
	num    uint64
	cas    uint64
}

// linState is the model of one key. cas is the unique of the current
// version once a gets has observed it, 0 while unknown.
type linState struct {
	present bool
	value   string
	cas     uint64
}

// linModel is memcached's semantics for one key. Every mutation makes a
// new version with a new, unknown unique; a gets binds the current
// version's unique (or must match it); a cas succeeds exactly when its
// unique is the current version's. Uniques are never reused, so a cas whose
// unique was observed for an older version must fail.
var linModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(linInput).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() interface{} { return linState{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		s, in, out := state.(linState), input.(linInput), output.(linOutput)
		switch in.op {
		case "get":
			if !s.present {
				return out.status == "MISS", s
			}
			return out.status == "VALUE" && out.value == s.value, s
		case "gets":
			if !s.present {
				return out.status == "MISS", s
			}
			if out.status != "VALUE" || out.value != s.value || (s.cas != 0 && s.cas != out.cas) {
				return false, s
			}
			s.cas = out.cas
			return true, s
		case "set":
			return out.status == "STORED", linState{present: true, value: in.value}
		case "append":
			if !s.present {
				return out.status == "NOT_STORED", s
			}
			return out.status == "STORED", linState{present: true, value: s.value + in.value}
		case "delete":
			if !s.present {
				return out.status == "NOT_FOUND", s
			}
			return out.status == "DELETED", linState{}
		case "cas":
			switch {
			case !s.present:
				return out.status == "NOT_FOUND", s
			case s.cas != 0 && s.cas == in.cas:
				return out.status == "STORED", linState{present: true, value: in.value}
			default:
				return out.status == "EXISTS", s
			}
		case "incr", "decr":
			if !s.present {
				return out.status == "NOT_FOUND", s
			}
			n, ok := parseCounter(s.value)
			if !ok {
				return out.status == "NONNUM", s
			}
			if in.op == "incr" {
				n += in.delta
			} else {
				n -= min(n, in.delta)
			}
			if out.status != "NUM" || out.num != n {
				return false, s
			}
			digits := strconv.FormatUint(n, 10)
			if len(digits) < len(s.value) {
				// Written in place, padded with spaces to the old length.
				digits += strings.Repeat(" ", len(s.value)-len(digits))
			}
			return true, linState{present: true, value: digits}
		}
		return false, s
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(linInput), output.(linOutput)
		args := ""
		switch in.op {
		case "set", "append":
			args = fmt.Sprintf(" %q", in.value)
		case "cas":
			args = fmt.Sprintf(" %q %d", in.value, in.cas)
		case "incr", "decr":
			args = fmt.Sprintf(" %d", in.delta)
		}
		res := out.status
		switch out.status {
		case "VALUE":
			res = fmt.Sprintf("%q cas %d", out.value, out.cas)
		case "NUM":
			res = strconv.FormatUint(out.num, 10)
		}
		return fmt.Sprintf("%s %s%s -> %s", in.op, in.key, args, res)
	},
	DescribeState: func(state interface{}) string {
		s := state.(linState)
		if !s.present {
			return "absent"
		}
		return fmt.Sprintf("%q cas %d", s.value, s.cas)
	},
}

// parseCounter reads a value as memcached's incr does for the values this
// test stores (digits, possibly followed by the padding spaces of an
// earlier decr, or a non-numeric marker): digits then the end or white
// space, no overflow.
func parseCounter(v string) (uint64, bool) {
	i := 0
	var n uint64
	for ; i < len(v) && v[i] >= '0' && v[i] <= '9'; i++ {
		d := uint64(v[i] - '0')
		if n > (^uint64(0)-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if i == 0 || (i < len(v) && v[i] != ' ') {
		return 0, false
	}
	return n, true
}

func TestLinearizability(t *testing.T) {
	ops := *linOps
	if testing.Short() {
		ops /= 2
	}
	forVariants(t, func(t *testing.T, v serverVariant) {
		mode := v.name
		s := startServer(t, v.mode, append([]string{"-t", "2", "--workers", "3"}, v.extra...)...)
		history := recordHistory(t, s.Addr, int64(len(mode)), ops)
		res, info := porcupine.CheckOperationsVerbose(linModel, history, time.Minute)
		dir := *linViz
		if res != porcupine.Ok && dir == "" {
			dir = t.TempDir()
		}
		if dir != "" {
			path := filepath.Join(dir, "linearizability-"+mode+".html")
			if err := porcupine.VisualizePath(linModel, info, path); err != nil {
				t.Logf("visualization: %v", err)
			} else {
				t.Logf("porcupine visualization: %s", path)
			}
		}
		switch res {
		case porcupine.Ok:
			t.Logf("%d operations by %d clients on %d keys: linearizable", len(history), linClients, linKeys)
		case porcupine.Illegal:
			t.Fatalf("%d operations: history is NOT linearizable", len(history))
		default:
			t.Fatalf("%d operations: porcupine did not finish in time", len(history))
		}
	})
}

// recordHistory runs the clients and returns every completed operation.
func recordHistory(t *testing.T, addr string, seed int64, opsPerClient int) []porcupine.Operation {
	base := time.Now()
	now := func() int64 { return int64(time.Since(base)) }
	var mu sync.Mutex
	var history []porcupine.Operation
	var wg sync.WaitGroup
	errs := make(chan error, linClients)
	for id := 0; id < linClients; id++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			cl, err := newLinClient(addr)
			if err != nil {
				errs <- err
				return
			}
			defer cl.c.Close()
			r := rand.New(rand.NewSource(seed*100 + int64(id)))
			lastCAS := map[string]uint64{}
			for i := 0; i < opsPerClient; i++ {
				in := randomLinInput(r, id, i, lastCAS)
				call := now()
				out, err := cl.do(in)
				ret := now()
				if err != nil {
					errs <- fmt.Errorf("client %d: %s: %w", id, linModel.DescribeOperation(in, linOutput{}), err)
					return
				}
				if in.op == "gets" && out.status == "VALUE" {
					lastCAS[in.key] = out.cas
				}
				mu.Lock()
				history = append(history, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
			}
		}(id)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return history
}

func randomLinInput(r *rand.Rand, client, i int, lastCAS map[string]uint64) linInput {
	in := linInput{key: "lin:" + strconv.Itoa(r.Intn(linKeys))}
	value := func() string {
		if r.Intn(8) == 0 {
			return "x" + strconv.Itoa(client) // not a number
		}
		return strconv.Itoa(r.Intn(120))
	}
	switch x := r.Intn(100); {
	case x < 22:
		in.op = "get"
	case x < 40:
		in.op = "gets"
	case x < 55:
		in.op, in.value = "set", value()
	case x < 67:
		in.op, in.value = "cas", value()
		in.cas = lastCAS[in.key]
		if in.cas == 0 || r.Intn(6) == 0 {
			in.cas = 1<<60 + uint64(r.Intn(100)) // never issued
		}
	case x < 79:
		in.op, in.delta = "incr", uint64(1+r.Intn(20))
	case x < 85:
		in.op, in.delta = "decr", uint64(1+r.Intn(50))
	case x < 93:
		in.op = "delete"
	default:
		in.op, in.value = "append", strconv.Itoa(r.Intn(10))
	}
	return in
}

// linClient is a minimal text-protocol client on one connection.
type linClient struct {
	c net.Conn
	r *bufio.Reader
}

func newLinClient(addr string) (*linClient, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &linClient{c: c, r: bufio.NewReader(c)}, nil
}

func (cl *linClient) do(in linInput) (linOutput, error) {
	var req string
	switch in.op {
	case "get", "gets":
		req = in.op + " " + in.key + "\r\n"
	case "set", "append":
		req = fmt.Sprintf("%s %s 0 0 %d\r\n%s\r\n", in.op, in.key, len(in.value), in.value)
	case "cas":
		req = fmt.Sprintf("cas %s 0 0 %d %d\r\n%s\r\n", in.key, len(in.value), in.cas, in.value)
	case "incr", "decr":
		req = fmt.Sprintf("%s %s %d\r\n", in.op, in.key, in.delta)
	case "delete":
		req = "delete " + in.key + "\r\n"
	}
	_ = cl.c.SetDeadline(time.Now().Add(2 * time.Minute)) // a hang guard
	if _, err := io.WriteString(cl.c, req); err != nil {
		return linOutput{}, err
	}
	line, err := cl.line()
	if err != nil {
		return linOutput{}, err
	}
	switch {
	case line == "END":
		return linOutput{status: "MISS"}, nil
	case strings.HasPrefix(line, "VALUE "):
		f := strings.Fields(line)
		if len(f) < 4 {
			return linOutput{}, fmt.Errorf("bad VALUE line %q", line)
		}
		size, err := strconv.Atoi(f[3])
		if err != nil {
			return linOutput{}, fmt.Errorf("bad VALUE line %q", line)
		}
		data := make([]byte, size+2)
		if _, err := io.ReadFull(cl.r, data); err != nil {
			return linOutput{}, err
		}
		out := linOutput{status: "VALUE", value: string(data[:size])}
		if len(f) == 5 {
			out.cas, _ = strconv.ParseUint(f[4], 10, 64)
		}
		if end, err := cl.line(); err != nil || end != "END" {
			return linOutput{}, fmt.Errorf("after VALUE: %q, %v", end, err)
		}
		return out, nil
	case line == "STORED", line == "NOT_STORED", line == "EXISTS", line == "NOT_FOUND", line == "DELETED":
		return linOutput{status: line}, nil
	case line == "CLIENT_ERROR cannot increment or decrement non-numeric value":
		return linOutput{status: "NONNUM"}, nil
	}
	if n, err := strconv.ParseUint(line, 10, 64); err == nil && (in.op == "incr" || in.op == "decr") {
		return linOutput{status: "NUM", num: n}, nil
	}
	return linOutput{}, fmt.Errorf("unexpected reply %q", line)
}

func (cl *linClient) line() (string, error) {
	s, err := cl.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(s, "\r\n"), nil
}

// TestLinearizabilityModel checks that the model and porcupine tell legal
// histories from illegal ones, so that "linearizable" above means something.
func TestLinearizabilityModel(t *testing.T) {
	op := func(client int, call, ret int64, in linInput, out linOutput) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
	}
	set := func(v string) linInput { return linInput{op: "set", key: "k", value: v} }
	get := linInput{op: "get", key: "k"}
	gets := linInput{op: "gets", key: "k"}
	cas := func(v string, u uint64) linInput { return linInput{op: "cas", key: "k", value: v, cas: u} }
	incr := func(d uint64) linInput { return linInput{op: "incr", key: "k", delta: d} }
	decr := func(d uint64) linInput { return linInput{op: "decr", key: "k", delta: d} }
	stored := linOutput{status: "STORED"}
	value := func(v string, u uint64) linOutput { return linOutput{status: "VALUE", value: v, cas: u} }
	tests := []struct {
		name  string
		hist  []porcupine.Operation
		legal bool
	}{
		{"read after write", []porcupine.Operation{
			op(0, 0, 10, set("a"), stored), op(1, 20, 30, get, value("a", 0))}, true},
		{"stale read after a completed write", []porcupine.Operation{
			op(0, 0, 10, set("a"), stored), op(0, 20, 30, set("b"), stored), op(1, 40, 50, get, value("a", 0))}, false},
		{"concurrent write may be seen or not", []porcupine.Operation{
			op(0, 0, 10, set("a"), stored), op(0, 20, 60, set("b"), stored),
			op(1, 30, 40, get, value("a", 0)), op(2, 30, 50, get, value("b", 0))}, true},
		{"reads must not go back in time", []porcupine.Operation{
			op(0, 0, 10, set("a"), stored), op(0, 20, 60, set("b"), stored),
			op(1, 30, 40, get, value("b", 0)), op(1, 45, 50, get, value("a", 0))}, false},
		{"cas with the current unique wins", []porcupine.Operation{
			op(0, 0, 10, set("a"), stored), op(1, 20, 30, gets, value("a", 7)),
			op(1, 40, 50, cas("b", 7), stored), op(2, 60, 70, get, value("b", 0))}, true},
		{"cas after an intervening set must fail", []porcupine.Operation{
			op(0, 0, 10, set("a"), stored), op(1, 20, 30, gets, value("a", 7)),
			op(0, 32, 38, set("c"), stored), op(1, 40, 50, cas("b", 7), stored)}, false},
		{"two cas with one unique cannot both win", []porcupine.Operation{
			op(0, 0, 10, set("a"), stored), op(1, 20, 30, gets, value("a", 7)), op(2, 20, 30, gets, value("a", 7)),
			op(1, 40, 50, cas("b", 7), stored), op(2, 40, 50, cas("c", 7), stored)}, false},
		{"incr and decr arithmetic with padding", []porcupine.Operation{
			op(0, 0, 10, set("10"), stored), op(0, 20, 30, decr(1), linOutput{status: "NUM", num: 9}),
			op(0, 40, 50, get, value("9 ", 0)), op(0, 60, 70, incr(100), linOutput{status: "NUM", num: 109})}, true},
		{"lost increment", []porcupine.Operation{
			op(0, 0, 10, set("1"), stored), op(1, 20, 40, incr(1), linOutput{status: "NUM", num: 2}),
			op(2, 20, 40, incr(1), linOutput{status: "NUM", num: 2})}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(linModel, tc.hist); got != tc.legal {
				t.Fatalf("linearizable = %v, want %v", got, tc.legal)
			}
		})
	}
}
