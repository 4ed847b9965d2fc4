package loadgen

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// maxRedials is how many times a worker reconnects after a dropped
// connection before it gives up for the rest of the run.
const maxRedials = 3

// slot is one request of the current batch.
type slot struct {
	op  Op
	key uint64
}

// worker owns one connection and runs the closed loop on it.
type worker struct {
	id      int
	st      *run
	conn    *Conn
	keys    KeyGen
	rng     *rand.Rand
	samples *Samples
	t       tally
	plan    []slot
	misses  []uint64 // LookAside: keys of the current batch that missed
	own     int64    // Sequential with Requests > 0: requests left; else -1
	redials int
	lost    bool // gave up reconnecting

	keyBuf []byte
	valBuf []byte // get replies are read into it
	setOut []byte // values to set are built in it
}

func (w *worker) loop() {
	defer w.samples.Flush()
	defer func() { w.st.cnt.add(&w.t) }()
	for !w.st.stop.Load() {
		n := w.claim()
		if n == 0 {
			return
		}
		var err error
		if w.st.cfg.Workload == LookAside {
			err = w.lookAsideBatch(n)
		} else {
			err = w.mixedBatch(n)
		}
		w.st.cnt.add(&w.t)
		if err != nil && !w.recover(err) {
			return
		}
	}
}

func (w *worker) claim() int {
	want := w.st.cfg.Depth
	if w.own < 0 {
		return w.st.claim(want)
	}
	n := min(int64(want), w.own)
	w.own -= n
	return int(n)
}

// recover handles an error that broke the connection: it counts it and
// redials. It returns false when the worker must stop.
func (w *worker) recover(err error) bool {
	st := w.st
	if st.hardCap.Load() {
		return false // the hard cap closed the connection on purpose
	}
	if errors.Is(err, ErrProtocol) {
		st.cnt.errProtocol.Add(1)
	} else {
		st.cnt.errIO.Add(1)
	}
	st.cnt.noteFirst(err.Error())
	st.untrack(w.conn)
	for !st.stop.Load() && w.redials < maxRedials {
		w.redials++
		c, derr := Dial(st.cfg.Addr, st.cfg.DialTimeout)
		if derr == nil {
			st.track(c)
			w.conn = c
			return true
		}
		st.cnt.errIO.Add(1)
		st.cnt.noteFirst(derr.Error())
		time.Sleep(10 * time.Millisecond * time.Duration(w.redials))
	}
	w.lost = !st.stop.Load()
	return false
}

func (w *worker) key(i uint64) []byte {
	w.keyBuf = AppendKey(w.keyBuf[:0], w.st.cfg.KeyPrefix, i)
	return w.keyBuf
}

// mixedBatch sends n sets and gets in the configured ratio, then reads the
// n replies.
func (w *worker) mixedBatch(n int) error {
	cfg := w.st.cfg
	total := cfg.SetRatio + cfg.GetRatio
	for j := range n {
		op := OpGet
		if cfg.SetRatio > 0 && (cfg.GetRatio == 0 || w.rng.IntN(total) < cfg.SetRatio) {
			op = OpSet
		}
		k := w.keys.Next()
		w.plan[j] = slot{op: op, key: k}
		if op == OpSet {
			w.setOut = w.st.values.AppendValue(w.setOut[:0], k)
			w.conn.AppendSet(w.key(k), 0, 0, w.setOut)
			w.t.bytesSent += int64(len(w.setOut))
		} else {
			w.conn.AppendGet(w.key(k))
		}
	}
	t0 := time.Now()
	if err := w.conn.Flush(); err != nil {
		return err
	}
	for _, s := range w.plan[:n] {
		var err error
		if s.op == OpSet {
			err = w.readSet()
		} else {
			_, err = w.readGet(s.key)
		}
		w.samples.Add(s.op, time.Since(t0))
		if err != nil {
			return err
		}
	}
	return nil
}

// lookAsideBatch gets n keys, then sets the ones that missed.
func (w *worker) lookAsideBatch(n int) error {
	for j := range n {
		k := w.keys.Next()
		w.plan[j] = slot{op: OpGet, key: k}
		w.conn.AppendGet(w.key(k))
	}
	t0 := time.Now()
	if err := w.conn.Flush(); err != nil {
		return err
	}
	w.misses = w.misses[:0]
	for _, s := range w.plan[:n] {
		hit, err := w.readGet(s.key)
		w.samples.Add(OpGet, time.Since(t0))
		if err != nil {
			return err
		}
		if !hit {
			w.misses = append(w.misses, s.key)
		}
	}
	if len(w.misses) == 0 {
		return nil
	}
	for _, k := range w.misses {
		w.setOut = w.st.values.AppendValue(w.setOut[:0], k)
		w.conn.AppendSet(w.key(k), 0, 0, w.setOut)
		w.t.bytesSent += int64(len(w.setOut))
	}
	t0 = time.Now()
	if err := w.conn.Flush(); err != nil {
		return err
	}
	for range w.misses {
		err := w.readSet()
		w.samples.Add(OpSet, time.Since(t0))
		if err != nil {
			return err
		}
	}
	return nil
}

// readSet reads one storage reply. It returns only errors that broke the
// connection; error replies are counted.
func (w *worker) readSet() error {
	st, err := w.conn.ReadStore()
	if err != nil {
		if err = w.replyErr(err); err == nil {
			w.t.sets++
		}
		return err
	}
	w.t.sets++
	if st != Stored {
		w.t.errUnstored++
		w.st.cnt.noteFirst("set answered " + st.String())
	}
	return nil
}

// readGet reads one get reply for key index k, verifies it, and reports
// whether it was a hit. It returns only errors that broke the connection.
func (w *worker) readGet(k uint64) (bool, error) {
	rep, err := w.conn.ReadGet(w.valBuf[:0])
	if err != nil {
		if err = w.replyErr(err); err == nil {
			w.t.gets++
		}
		return false, err
	}
	w.t.gets++
	if !rep.Hit {
		w.t.misses++
		return false, nil
	}
	if cap(rep.Value) > cap(w.valBuf) {
		w.valBuf = rep.Value[:0]
	}
	w.t.hits++
	w.t.bytesRead += int64(len(rep.Value))
	if w.st.cfg.Verify {
		want := w.key(k)
		if !bytes.Equal(rep.Key, want) {
			// A reply for another key means replies are out of order.
			w.t.errVerify++
			w.st.cnt.noteFirst(fmt.Sprintf("get %s answered with key %s", want, rep.Key))
		} else if !w.st.values.Verify(k, rep.Value) {
			w.t.errVerify++
			w.st.cnt.noteFirst(fmt.Sprintf("get %s: %d value bytes differ from the %d set "+
				"(stale data from an earlier run? flush_all first or change the key prefix)",
				want, len(rep.Value), w.st.values.Size(k)))
		}
	}
	return true, nil
}

// replyErr counts an error reply and swallows it, or returns a connection
// error unchanged.
func (w *worker) replyErr(err error) error {
	var re *ReplyError
	if !errors.As(err, &re) {
		return err
	}
	switch re.Kind {
	case "SERVER_ERROR":
		w.t.errServer++
	case "CLIENT_ERROR":
		w.t.errClient++
	default:
		w.t.errGeneric++
	}
	w.st.cnt.noteFirst(re.Error())
	return nil
}
