module github.com/tandemcache/tandem

go 1.26.8

require (
	github.com/VictoriaMetrics/metrics v1.45.0
	github.com/anishathalye/porcupine v1.3.1
	github.com/bradfitz/gomemcache v0.0.0-20260422231931-4d751bb6e37c
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/couchbase/gomemcached v0.3.4
	github.com/dgryski/go-tinylfu v0.1.0
	github.com/mattn/go-isatty v0.0.20
	github.com/panjf2000/ants/v2 v2.12.1
	github.com/panjf2000/gnet/v2 v2.9.7
	github.com/prometheus/client_model v0.6.3
	github.com/prometheus/common v0.72.0
	github.com/rs/zerolog v1.35.1
	github.com/spf13/pflag v1.1.0
	golang.org/x/sys v0.48.0
)

require (
	github.com/couchbase/goutils v0.1.2 // indirect
	github.com/google/flatbuffers v24.3.25+incompatible // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	github.com/valyala/fastrand v1.1.0 // indirect
	github.com/valyala/histogram v1.2.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.27.0 // indirect
	golang.org/x/crypto v0.32.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	gopkg.in/natefinch/lumberjack.v2 v2.2.1 // indirect
)
