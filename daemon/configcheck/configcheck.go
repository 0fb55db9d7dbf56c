// Package configcheck runs each feature's own check on its section of a loaded configuration (the egress rules, the salience rules, the MCP firewall's rules, the home view's presets and the credential deny-list, the automations, the HTTP API's TCP address), so that a file any feature would refuse stops contextd where it loads, naming the key.
package configcheck

import (
	"errors"
	"fmt"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/automation"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/homeview"
	"github.com/contextd/contextd/daemon/httpguard"
	"github.com/contextd/contextd/daemon/netview"
	"github.com/contextd/contextd/mcp/intercept"
	"github.com/contextd/contextd/salience"
)

// Load is config.Load followed by Check: the configuration every command
// of contextd starts from.
func Load(explicit string) (*config.Config, error) {
	c, err := config.Load(explicit)
	if err != nil {
		return nil, err
	}
	if err := Check(c); err != nil {
		return nil, err
	}
	return c, nil
}

// Check compiles every section a feature owns and drops the results. The
// error names the file (when there is one) and the key, and wraps
// catalog.ErrConfig.
func Check(c *config.Config) error {
	err := check(c)
	if err == nil {
		return nil
	}
	if !errors.Is(err, catalog.ErrConfig) {
		err = fmt.Errorf("%w: %v", catalog.ErrConfig, err)
	}
	if c.Source != "" {
		err = fmt.Errorf("config %s: %w", c.Source, err)
	}
	return err
}

func check(c *config.Config) error {
	if err := homeview.CheckPresetNames("home.presets_off", c.Home.PresetsOff); err != nil {
		return err
	}
	for _, l := range c.ShownPaths() {
		if err := homeview.CheckConfiguredList(l.Key, l.Paths); err != nil {
			return err
		}
	}
	if _, err := netview.Compile(c); err != nil {
		return err
	}
	if _, err := Salience(c.Salience); err != nil {
		return err
	}
	if err := checkHTTPTCP(c.HTTP.TCP); err != nil {
		return err
	}
	for _, a := range c.Automations {
		if _, err := automation.Compile(a); err != nil {
			return err
		}
	}
	return intercept.Check(&c.MCP.Intercept)
}

// Salience compiles the built-in salience rules and the user's ([salience]
// rules), whether or not the pass is enabled. An error names the key.
func Salience(s config.Salience) (*salience.Set, error) {
	extra := make([]salience.UserRule, 0, len(s.Rules))
	for _, r := range s.Rules {
		extra = append(extra, salience.UserRule(r))
	}
	set, err := salience.Compile(extra)
	if err != nil {
		return nil, fmt.Errorf("salience.rules: %v", err)
	}
	return set, nil
}

// checkHTTPTCP refuses a TCP address for the HTTP API that is not a
// loopback address, with the check the daemon makes again when it binds
// it (httpguard.CheckLoopback): one reading of "loopback", so a file that
// loads also starts.
func checkHTTPTCP(addr string) error {
	if addr == "" {
		return nil
	}
	return httpguard.CheckLoopback(addr)
}
