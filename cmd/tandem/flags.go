package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// The command line takes every flag of memcached 1.6.18 (`memcached -h`),
// short and long, so that tandem starts under a memcached command line, plus
// tandem's own. A memcached flag does what it does in memcached where that
// maps onto tandem; where it does not, tandem logs one warning naming it and
// starts, unless running would change what clients see (then it refuses to
// start: see Config.unservable).

// parseFlags reads the command line into a Config through the flag table
// (options.go). The flag set is returned for printing --help.
func parseFlags(args []string) (*Config, *pflag.FlagSet, error) {
	c := &Config{TLS: defaultTLSSettings()}
	fs := pflag.NewFlagSet("tandem", pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by run, help by usage
	fs.SortFlags = false
	text := make([]string, len(options)) // the values of the flags set converts
	for i := range options {
		if o := &options[i]; o.name != "" {
			o.register(fs, c, &text[i])
		}
	}
	if err := fs.Parse(args); err != nil {
		return nil, fs, err
	}
	if fs.NArg() > 0 {
		return nil, fs, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for i, o := range options {
		if o.set != nil {
			if err := o.set(c, text[i], fs.Changed(o.name)); err != nil {
				return nil, fs, err
			}
		}
	}
	if err := c.applyExtended(); err != nil {
		return nil, fs, err
	}
	c.collectWarnings(fs)
	return c, fs, nil
}

// collectWarnings lists, once each, the memcached flags given that tandem
// accepts without acting on them, and what the flag table warns about the
// values given.
func (c *Config) collectWarnings(fs *pflag.FlagSet) {
	for _, o := range options {
		if o.name == "" {
			continue
		}
		given := fs.Changed(o.name)
		if o.inert != "" && given {
			c.Warnings = append(c.Warnings, "-"+o.short+": "+o.inert+"; ignored")
		}
		if o.warn != nil {
			if w := o.warn(c, given); w != "" {
				c.Warnings = append(c.Warnings, w)
			}
		}
	}
}

// printUsage writes --help: the flags by group, each with its default once,
// and the exit statuses.
func printUsage(w io.Writer, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "tandem %s: a memcached-compatible cache server (memcached %s protocols)\n\n", version, protocolVersion)
	fmt.Fprintf(w, "Usage: tandem [flags]\n\nIt takes memcached 1.6.18's flags and behaves as memcached does where tandem can;\nsee docs/operations.md.\n")
	for _, g := range helpGroups {
		sub := pflag.NewFlagSet(g, pflag.ContinueOnError)
		sub.SortFlags = false
		for _, n := range groupFlags(g) {
			sub.AddFlag(fs.Lookup(n))
		}
		fmt.Fprintf(w, "\n%s:\n%s", g, sub.FlagUsagesWrapped(100))
	}
	fmt.Fprintf(w, "\nExit status: %d after a clean shutdown (signal or shutdown command), %d when the server\ncannot start or stops on an error, %d for a wrong command line.\n", exitOK, exitFailure, exitUsage)
}

// groupFlags returns the flags of --help group g, in table order.
func groupFlags(g string) []string {
	var names []string
	for _, o := range options {
		if o.name != "" && o.group == g {
			names = append(names, o.name)
		}
	}
	return names
}
