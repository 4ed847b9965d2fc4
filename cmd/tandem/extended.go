package main

import (
	"fmt"
	"strings"
)

// applyExtended maps memcached's -o options onto tandem's settings through
// the flag table (options.go): a key that sets what a flag sets is applied,
// the extstore keys are collected to be refused (see Config.unservable), the
// others are warned about, and a key memcached does not know is an error,
// as in memcached.
func (c *Config) applyExtended() error {
	for _, opt := range c.Options {
		for _, kv := range strings.Split(opt, ",") {
			k, _, _ := strings.Cut(kv, "=")
			if k == "" {
				continue
			}
			o := optionByKey[k]
			switch {
			case o == nil:
				return fmt.Errorf("-o: unknown option %q (memcached 1.6.18 has no such key)", kv)
			case o.oSet != nil:
				warn, err := o.oSet(c, kv)
				if err != nil {
					return err
				}
				if warn != "" {
					c.Warnings = append(c.Warnings, warn)
				}
			case o.inert != "":
				c.Warnings = append(c.Warnings, "-o "+kv+": "+o.inert+"; ignored")
			}
		}
	}
	return nil
}
