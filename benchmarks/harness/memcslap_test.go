package harness

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestParseMemcslap(t *testing.T) {
	// memcslap's reports as libmemcached-tools 1.1.4 prints them.
	const get = `Time to generate       2000 test keys:                0.092 seconds.
Time to set            2000 keys:                     0.191 seconds.
Time to start             2 threads:                  0.001 seconds.
--------------------------------------------------------------------
Time to get            4000 keys by    2 threads:     0.139 seconds.
--------------------------------------------------------------------
Time total:                                           0.423 seconds.
`
	const set = `Time to generate       2000 test keys:                0.020 seconds.
Time to start             2 threads:                  0.001 seconds.
--------------------------------------------------------------------
Time to set            4000 keys by    2 threads:     0.146 seconds.
--------------------------------------------------------------------
Time total:                                           0.167 seconds.
`
	for _, tc := range []struct {
		name, out, test string
		want            memcslapResult
		err             string
	}{
		{"get", get, "get", memcslapResult{Preloaded: 2000, Requests: 4000, Seconds: 0.139}, ""},
		{"set", set, "set", memcslapResult{Requests: 4000, Seconds: 0.146}, ""},
		{"another test's report", set, "get", memcslapResult{}, "no \"get\" timing"},
		{"no report", "memcslap: could not connect\n", "get", memcslapResult{}, "no \"get\" timing"},
		{"zero time", strings.Replace(set, "0.146", "0.000", 1), "set", memcslapResult{}, "timed 4000 requests in 0 s"},
	} {
		got, err := parseMemcslap(tc.out, tc.test)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

// TestMemcslapPhase runs memcslap's two tests against memcached, where both
// are installed.
func TestMemcslapPhase(t *testing.T) {
	mc, err1 := FindMemcached(context.Background(), false, nil)
	ms, err2 := FindMemcslap(context.Background(), false, nil)
	if err1 != nil || err2 != nil {
		t.Skipf("needs memcached and memcslap: %v %v", err1, err2)
	}
	srv, err := StartServer(context.Background(), mc, MemcachedTarget(1), ServerLimits{64, 100}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	r := &runner{opts: &Options{PhaseCap: time.Minute}, bins: map[string]string{clientMemcslap: ms}}
	for _, test := range []string{"get", "set"} {
		var m Measurement
		if err := r.memcslap(context.Background(), srv, MemcslapLoad{Test: test, Concurrency: 2, Execute: 300}, &m); err != nil {
			t.Fatalf("%s: %v", test, err)
		}
		want := int64(600)
		if test == "get" {
			want += 300 // the keys it stores first
		}
		if m.Requests != want || m.ReqPerSec <= 0 || m.ElapsedSec <= 0 {
			t.Errorf("%s: %+v; want %d requests and a rate", test, m, want)
		}
	}
}
