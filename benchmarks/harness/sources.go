package harness

// The posts the scenarios reproduce. The project keeps saved copies of them
// (docs/benchmark-method.md, "Sources", says what each scenario assumed where a
// post is silent); the copies do not carry their own web addresses, so each
// line gives what identifies the post and the addresses it cites.
const (
	sourceThreads = "\"single-threaded vs multi-threaded memcached\", liusifan, memcached mailing list, " +
		"2007-05-18 (message id 200705181219525625173@gmail.com): memcached 1.2.0 against spcached " +
		"(http://code.google.com/p/spcached/), measured with MemCachedThreadBench " +
		"(http://code.google.com/p/spcached/wiki/benchmarktool)."
	sourceFairness = "Steve Grimm's reply on the memcached mailing list, 2007-05-18, to liusifan's " +
		"\"single-threaded vs multi-threaded memcached\": compare the same code single- and multi-threaded, " +
		"run -t 1 to see the threading machinery's own overhead, and open many connections."
	sourceSizes = "Kristian's comparison of the Whalin and spymemcached Java clients (a mailing-list message, " +
		"undated in the saved copy): 2,000 values written then read back at 15 sizes, memcached 1.2.4 on " +
		"localhost with 64 MB, 1 and 4 threads."
	sourceSingle = "lanjinwei's lserver test (Chinese blog post, 2009; lserver: http://code.google.com/p/lserver): " +
		"a thread-pool C++ server with a toy memcached front end against memcached 1.2.5, one connection, " +
		"1,000,000 sets and gets on one key and on many keys."
	sourceMany = "uniseraph, \"memcached reaches 66,000 TPS\" (令人振奋的结果:memcached 访问速度达到66000TPS), " +
		"JavaEye blog, 2008-10-27: memcached 1.2.6 with 8 threads, the Java commons-client " +
		"(https://commons-client.googlecode.com/svn/trunk, r144) at 50 to 400 threads, 2- and 8-byte values."
	sourceHitRatio = "no outside post: the hit-ratio goal of the performance issue (#8) and issue #18 " +
		"(TinyLFU admission against memcached's LRU)."
	sourceMemory = "no outside post: the memory goals of the performance issue (#8) and issue #18."
)
