package main

import (
	"os"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// newLogger builds the process logger from --log-level, --log-format and -v.
func newLogger(cfg *Config) zerolog.Logger {
	level, err := zerolog.ParseLevel(cfg.LogLevel)
	if err != nil || cfg.LogLevel == "" {
		level = zerolog.InfoLevel
	}
	switch {
	case cfg.Verbose >= 2:
		level = zerolog.TraceLevel
	case cfg.Verbose == 1:
		level = zerolog.DebugLevel
	}
	zerolog.SetGlobalLevel(level)
	format := cfg.LogFormat
	if format == "" {
		format = "json"
		if isatty.IsTerminal(os.Stderr.Fd()) {
			format = "console"
		}
	}
	var l zerolog.Logger
	if format == "console" {
		l = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: "15:04:05.000"})
	} else {
		l = zerolog.New(os.Stderr)
	}
	return l.With().Timestamp().Logger()
}

// setVerbosity applies the verbosity command at run time: 0 is info,
// 1 debug, 2 and above trace (memcached's -v, -vv).
func setVerbosity(level int) {
	switch {
	case level <= 0:
		zerolog.SetGlobalLevel(zerolog.InfoLevel)
	case level == 1:
		zerolog.SetGlobalLevel(zerolog.DebugLevel)
	default:
		zerolog.SetGlobalLevel(zerolog.TraceLevel)
	}
}
