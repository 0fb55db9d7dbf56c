package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/listen"
)

// defaultHTTPSocket is the HTTP API's socket beside the daemon's, under
// the user's runtime directory: /run/user/UID when XDG_RUNTIME_DIR is
// unset, never a path relative to where the command runs (another user
// could plant a socket there and read what is sent).
func defaultHTTPSocket() string {
	return listen.HTTPSocketPath("")
}

func apiCommand() *cobra.Command {
	var method, data, socket string
	c := &cobra.Command{
		Use:   "api PATH",
		Short: "Make a request to the daemon's HTTP API over its Unix socket and print the answer",
		Long: `Send one request to the HTTP API (GET /v1/openapi.json describes it) over its Unix socket
and print the answer's body. The exit status is 0 for a 2xx answer; otherwise it is the exit
status of the problem's error code (contextd errors lists them), 70 for an answer without one.
-d sends a JSON body (POST unless -X says otherwise); -d @FILE reads it from FILE, -d @- from stdin.`,
		Args: oneArg("PATH"),
		RunE: func(c *cobra.Command, args []string) error {
			if socket == "" {
				socket = defaultHTTPSocket()
			}
			body, err := apiBody(data, c.InOrStdin())
			if err != nil {
				return err
			}
			if method == "" {
				method = http.MethodGet
				if body != nil {
					method = http.MethodPost
				}
			}
			return apiRequest(c.Context(), socket, strings.ToUpper(method), args[0], body, c.OutOrStdout())
		},
	}
	c.Flags().StringVarP(&method, "request", "X", "", "the method (default GET, or POST with -d)")
	c.Flags().StringVarP(&data, "data", "d", "", "a JSON body, or @FILE to read it from FILE (@- for stdin)")
	c.Flags().StringVar(&socket, "socket", "", "the HTTP API's socket (default $XDG_RUNTIME_DIR/contextd/http.sock)")
	return c
}

// apiBody is -d's body: the text itself, or a file's content after @.
func apiBody(data string, stdin io.Reader) ([]byte, error) {
	switch {
	case data == "":
		return nil, nil
	case data == "@-":
		return io.ReadAll(stdin)
	case strings.HasPrefix(data, "@"):
		b, err := os.ReadFile(data[1:])
		if err != nil {
			return nil, fmt.Errorf("-d %s: %v: %w", data, err, catalog.ErrNotFound)
		}
		return b, nil
	}
	return []byte(data), nil
}

// apiRequest makes the request and prints the body; an answer that is not
// 2xx is the exit status its problem's code has.
func apiRequest(ctx context.Context, socket, method, path string, body []byte, out io.Writer) error {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://contextd"+path, rd)
	if err != nil {
		return fmt.Errorf("%s %s: %v: %w", method, path, err, catalog.ErrUsage)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %v: %w", socket, err, catalog.ErrDaemonUnavailable)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: %v: %w", method, path, err, catalog.ErrConnectionLost)
	}
	out.Write(b)
	if len(b) > 0 && b[len(b)-1] != '\n' {
		fmt.Fprintln(out)
	}
	if resp.StatusCode/100 == 2 {
		return nil
	}
	return &exitError{code: problemExit(b), msg: fmt.Sprintf("%s %s: %s", method, path, resp.Status)}
}

// problemExit is the exit status of a problem's code; 70 when the body
// names no code the catalog knows.
func problemExit(body []byte) int {
	var p catalog.Problem
	if json.Unmarshal(body, &p) == nil {
		if c := catalog.Lookup(p.Code); c != nil {
			return c.Exit
		}
	}
	return catalog.ExitSoftware
}
