package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/contextd/contextd/daemon/automation/deliveries"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/configcheck"
)

// AutomationsReport is what `contextd automations list` shows; --json
// prints it as is.
type AutomationsReport struct {
	Automations []AutomationInfo `json:"automations"`
	// Deliveries are the latest deliveries, newest first.
	Deliveries []DeliveryInfo `json:"deliveries"`
	Note       string         `json:"note,omitempty"`
}

// AutomationInfo is one configured automation.
type AutomationInfo struct {
	Name         string `json:"name"`
	Scheme       string `json:"scheme"`
	Workspace    string `json:"workspace"`
	Tool         string `json:"tool"`
	Rate         string `json:"rate"`
	MaxBodyBytes int64  `json:"max_body_bytes"`
	Memory       bool   `json:"memory,omitempty"`
}

// DeliveryInfo is one delivery and how it ended.
type DeliveryInfo struct {
	Automation string    `json:"automation"`
	ID         string    `json:"id"`
	Received   time.Time `json:"received"`
	CallID     string    `json:"call_id,omitempty"`
	Finished   time.Time `json:"finished,omitzero"`
	// State is "running", "done", "failed" (the call ended with an error
	// code) or "refused" (it started no call).
	State string `json:"state"`
	Code  string `json:"code,omitempty"`
	Exit  int    `json:"exit"`
}

func automationsCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "automations",
		Short: "The webhook automations ([[automations]]) and their deliveries",
		Args:  noArgs,
	}
	c.AddCommand(automationsListCommand())
	return c
}

func automationsListCommand() *cobra.Command {
	var cfgPath string
	var asJSON bool
	var n int
	c := &cobra.Command{
		Use:   "list",
		Short: "List the configured automations and their latest deliveries with their outcomes",
		Long: `List the automations of the configuration (POST /v1/hooks/NAME runs each) and the latest
deliveries from the daemon's record (hooks.db): when each came, the call it started and how it
ended, or the error code it was refused with. It reads the files; the daemon need not run.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := configcheck.Load(cfgPath)
			if err != nil {
				return err
			}
			r := AutomationsReport{Automations: automationInfos(cfg)}
			r.Deliveries, r.Note = recentDeliveries(n)
			if asJSON {
				enc := json.NewEncoder(c.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			r.print(c.OutOrStdout())
			return nil
		},
	}
	c.Flags().StringVar(&cfgPath, "config", "", "configuration file (default $XDG_CONFIG_HOME/contextd/config.toml)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	c.Flags().IntVarP(&n, "number", "n", 20, "the latest this many deliveries")
	return c
}

func automationInfos(cfg *config.Config) []AutomationInfo {
	out := []AutomationInfo{}
	for _, a := range cfg.Automations {
		rate, _ := a.Rate.MarshalText()
		out = append(out, AutomationInfo{Name: a.Name, Scheme: a.Scheme, Workspace: a.Workspace, Tool: a.Tool,
			Rate: string(rate), MaxBodyBytes: int64(a.MaxBodyBytes), Memory: a.Memory != nil})
	}
	return out
}

// recentDeliveries are the latest n deliveries, newest first, or a note
// saying why there are none.
func recentDeliveries(n int) ([]DeliveryInfo, string) {
	out := []DeliveryInfo{}
	path, err := deliveries.DefaultPath()
	if err != nil {
		return out, err.Error()
	}
	// Opening creates the record: a missing one is only reported.
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return out, "no delivery received yet"
	}
	s, err := deliveries.Open(path)
	if err != nil {
		return out, fmt.Sprintf("the delivery record: %v", err)
	}
	defer s.Close()
	ds, err := s.Recent(n)
	if err != nil {
		return out, fmt.Sprintf("the delivery record: %v", err)
	}
	for _, d := range ds {
		out = append(out, DeliveryInfo{Automation: d.Automation, ID: d.ID, Received: d.Received, CallID: d.CallID,
			Finished: d.Finished, State: deliveryState(d), Code: d.Code, Exit: d.Exit})
	}
	return out, ""
}

func deliveryState(d deliveries.Delivery) string {
	switch {
	case d.CallID == "" && d.Code != "":
		return "refused"
	case d.Finished.IsZero():
		return "running"
	case d.Code != "":
		return "failed"
	}
	return "done"
}

// outcome is how a delivery ended, in a few words.
func (d DeliveryInfo) outcome() string {
	switch d.State {
	case "refused", "failed":
		return d.State + " " + d.Code
	case "done":
		return fmt.Sprintf("done, exit %d", d.Exit)
	}
	return d.State
}

// line is a delivery on one line of text.
func (d DeliveryInfo) line() string {
	s := fmt.Sprintf("%s  %-12s %-24s %s", d.Received.Local().Format("2006-01-02 15:04:05"), d.Automation, d.ID, d.outcome())
	if d.CallID != "" {
		s += "  call " + d.CallID
	}
	return s
}

func (r AutomationsReport) print(w io.Writer) {
	if len(r.Automations) == 0 {
		fmt.Fprintln(w, "automations: none configured ([[automations]] in config.toml)")
	} else {
		fmt.Fprintln(w, "automations:")
	}
	for _, a := range r.Automations {
		mem := ""
		if a.Memory {
			mem = ", kept as a memory"
		}
		fmt.Fprintf(w, "  %-12s %s, %s in %s, rate %s, body up to %s%s\n", a.Name, a.Scheme, a.Tool, a.Workspace, a.Rate, human(a.MaxBodyBytes), mem)
	}
	fmt.Fprintln(w, "deliveries:")
	for _, d := range r.Deliveries {
		fmt.Fprintf(w, "  %s\n", d.line())
	}
	if r.Note != "" {
		fmt.Fprintf(w, "  %s\n", r.Note)
	}
}
