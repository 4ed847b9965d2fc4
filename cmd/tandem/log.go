package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// timeFormat stamps log lines to the millisecond (RFC 3339).
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// logSink is the log's destination, which a daemon switches once it has
// detached (see daemon.go) and SIGHUP reopens (see reopen). Safe for
// concurrent use.
type logSink struct {
	mu   sync.RWMutex // held for reading by Write, for writing by set and reopen
	w    io.Writer    // guarded by mu
	file *os.File     // guarded by mu: --log-file, or nil
	path string       // --log-file
	// stderr says standard error is the log file too (a detached daemon's
	// crash output goes there): reopen moves it to the new file. Guarded by mu.
	stderr bool
}

// stderrToFile records that standard error was made the log file.
func (s *logSink) stderrToFile() {
	s.mu.Lock()
	s.stderr = s.file != nil
	s.mu.Unlock()
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.w.Write(p)
}

func (s *logSink) set(w io.Writer) {
	s.mu.Lock()
	s.w = w
	s.mu.Unlock()
}

// logFile returns the open log file, or nil.
func (s *logSink) logFile() *os.File {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.file
}

// reopen opens --log-file again and closes the file it replaces, so that a
// log rotated by renaming (logrotate without copytruncate) continues in a
// new file at the path: SIGHUP calls it. Without --log-file it does
// nothing. When the path cannot be opened the old file is kept.
func (s *logSink) reopen() error {
	if s.path == "" {
		return nil
	}
	f, err := openLogFile(s.path)
	if err != nil {
		return err
	}
	s.mu.Lock()
	old := s.file
	if s.w == io.Writer(old) {
		s.w = f
	}
	s.file = f
	var err2 error
	if s.stderr {
		err2 = unix.Dup2(int(f.Fd()), 2)
	}
	s.mu.Unlock()
	return errors.Join(err2, old.Close())
}

// openLogFile opens --log-file for appending, creating it.
func openLogFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--log-file: %w", err)
	}
	return f, nil
}

// close closes the log file, if any.
func (s *logSink) close() {
	if f := s.logFile(); f != nil {
		_ = f.Close()
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
		f, err := openLogFile(cfg.LogFile)
		if err != nil {
			return zerolog.Logger{}, nil, err
		}
		sink.file, sink.path, out, terminal = f, cfg.LogFile, f, false
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

// reopenLog handles SIGHUP: it reopens --log-file, so that logrotate can
// rename the file and signal (no copytruncate), and logs the outcome.
// tls says SIGHUP also reloads TLS certificates (-Z), which then log for
// themselves.
func reopenLog(log zerolog.Logger, sink *logSink, tls bool) {
	if sink.path == "" {
		if !tls {
			log.Info().Str("signal", "hangup").Msg("signal ignored: no --log-file to reopen and no TLS certificates to reload")
		}
		return
	}
	if err := sink.reopen(); err != nil {
		log.Error().Err(err).Str("log_file", sink.path).Msg("SIGHUP: cannot reopen the log file; still writing to the old one")
		return
	}
	log.Info().Str("signal", "hangup").Str("log_file", sink.path).Msg("log file reopened")
}
