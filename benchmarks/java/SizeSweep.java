// SizeSweep reproduces the Java client comparison of benchmarks/harness's
// scenario 2 ("sizes") with the client that post measured, spymemcached: at
// each of 15 value sizes, 2,000 values are stored, then fetched back and
// verified, split over T threads sharing one MemcachedClient (one
// connection), with the client's defaults (its 16 KB compression threshold
// included). A store waits for every set to complete. It prints the post's
// line per size and the total.
//
//   javac -cp /usr/share/java/spymemcached.jar SizeSweep.java
//   java -cp /usr/share/java/spymemcached.jar:. SizeSweep 127.0.0.1:11211 1
//
// Debian: apt-get install -y default-jdk-headless libspymemcached-java.

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Future;

import net.spy.memcached.AddrUtil;
import net.spy.memcached.MemcachedClient;

public class SizeSweep {
    static final int N = 2000;
    static final int[] SIZES = {2, 4, 9, 19, 39, 81, 168, 350, 729, 1516, 3154, 6561, 13647, 28388, 59049};

    interface Part {
        void run(int from, int to) throws Exception;
    }

    // split runs part over threads, each on its share of [0, N).
    static void split(int threads, Part part) throws Exception {
        List<Thread> ts = new ArrayList<>();
        Exception[] failed = new Exception[1];
        for (int t = 0; t < threads; t++) {
            int from = N * t / threads, to = N * (t + 1) / threads;
            Thread th = new Thread(() -> {
                try {
                    part.run(from, to);
                } catch (Exception e) {
                    synchronized (failed) {
                        failed[0] = e;
                    }
                }
            });
            ts.add(th);
            th.start();
        }
        for (Thread th : ts) {
            th.join();
        }
        if (failed[0] != null) {
            throw failed[0];
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: SizeSweep HOST:PORT THREADS");
            System.exit(2);
        }
        int threads = Integer.parseInt(args[1]);
        MemcachedClient c = new MemcachedClient(AddrUtil.getAddresses(args[0]));
        long total = 0;
        for (int size : SIZES) {
            byte[] v = new byte[size];
            for (int i = 0; i < size; i++) {
                v[i] = (byte) ('a' + (i * 7 + size) % 26);
            }
            String prefix = "sweep:" + size + ":";
            long t0 = System.nanoTime();
            split(threads, (from, to) -> {
                List<Future<Boolean>> fs = new ArrayList<>(to - from);
                for (int i = from; i < to; i++) {
                    fs.add(c.set(prefix + i, 0, v));
                }
                for (Future<Boolean> f : fs) {
                    if (!f.get()) {
                        throw new IllegalStateException("set refused");
                    }
                }
            });
            long t1 = System.nanoTime();
            split(threads, (from, to) -> {
                for (int i = from; i < to; i++) {
                    Object got = c.get(prefix + i);
                    if (!(got instanceof byte[]) || !Arrays.equals((byte[]) got, v)) {
                        throw new IllegalStateException("wrong value for " + prefix + i);
                    }
                }
            });
            long t2 = System.nanoTime();
            long store = (t1 - t0) / 1_000_000, fetch = Math.max((t2 - t1) / 1_000_000, 1);
            total += store + fetch;
            System.out.printf("N: %d Size: %d Store: %d Fetch: %d kbPerSecond: %d FetchesPerSecond: %d%n",
                    N, size, store, fetch, (long) N * size / 1024 * 1000 / fetch, (long) N * 1000 / fetch);
        }
        System.out.printf("Total: %d ms%n", total);
        c.shutdown();
    }
}
