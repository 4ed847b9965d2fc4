package main

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// timeFormat stamps log lines to the millisecond (RFC 3339).
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// logSink is the log's destination, which a daemon switches once it has
// detached (see daemon.go). Safe for concurrent use.
type logSink struct {
	w    atomic.Pointer[io.Writer]
	file *os.File // --log-file, or nil
}

func (s *logSink) Write(p []byte) (int, error) { return (*s.w.Load()).Write(p) }

func (s *logSink) set(w io.Writer) { s.w.Store(&w) }

// close closes the log file, if any.
func (s *logSink) close() {
	if s.file != nil {
		_ = s.file.Close()
	}
}

// logLevel is the zerolog level of --log-level and -v: -v and -vv log at
// debug (-vv adds the command log, written by the handler at debug level),
// -vvv at trace.
func logLevel(cfg *Config, verbosity int) zerolog.Level {
	switch {
	case verbosity >= 3:
		return zerolog.TraceLevel
	case verbosity >= 1:
		return zerolog.DebugLevel
	}
	level, err := zerolog.ParseLevel(cfg.LogLevel)
	if err != nil || cfg.LogLevel == "" {
		return zerolog.InfoLevel
	}
	return level
}

// newLogger builds the process logger from --log-level, --log-format,
// --log-file and -v, writing to sink (standard error, or the log file).
func newLogger(cfg *Config) (zerolog.Logger, *logSink, error) {
	zerolog.SetGlobalLevel(logLevel(cfg, cfg.Verbose))
	zerolog.TimeFieldFormat = timeFormat
	sink := &logSink{}
	var out io.Writer = os.Stderr
	terminal := isatty.IsTerminal(os.Stderr.Fd())
	if cfg.LogFile != "" {
		f, err := os.OpenFile(cfg.LogFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return zerolog.Logger{}, nil, fmt.Errorf("--log-file: %w", err)
		}
		sink.file, out, terminal = f, f, false
	}
	sink.set(out)
	format := cfg.LogFormat
	if format == "" {
		format = "json"
		if terminal {
			format = "console"
		}
	}
	var l zerolog.Logger
	if format == "console" {
		l = zerolog.New(zerolog.ConsoleWriter{Out: sink, TimeFormat: "15:04:05.000"})
	} else {
		l = zerolog.New(sink)
	}
	return l.With().Timestamp().Logger(), sink, nil
}

// setVerbosity applies the verbosity command at run time, as -v, -vv and
// -vvv do at start; 0 returns to --log-level.
func setVerbosity(cfg *Config, level int) {
	zerolog.SetGlobalLevel(logLevel(cfg, level))
}
