// Command rpclat times the parts of one call inside a process (dial, Status, a
// safe_bash Call), to tell process start-up cost from protocol cost.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/contextd/contextd/proxy/client"
	"github.com/contextd/contextd/wire"
	"github.com/contextd/contextd/wire/grpcclient"
)

func main() {
	ctx := context.Background()
	cwd, _ := os.Getwd()
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		c, err := grpcclient.Dial(client.SocketPath())
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		t1 := time.Now()
		if _, err := c.Status(ctx, &wire.StatusRequest{}); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		t2 := time.Now()
		s, err := c.Call(ctx, &wire.CallRequest{Tool: "safe_bash", InputJson: []byte(`{"command":"true"}`), Cwd: cwd})
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		for {
			if _, err := s.Recv(); err == io.EOF {
				break
			} else if err != nil {
				fmt.Println(err)
				os.Exit(1)
			}
		}
		t3 := time.Now()
		c.Close()
		fmt.Printf("dial %v  first RPC (Status) %v  Call safe_bash true %v\n", t1.Sub(t0), t2.Sub(t1), t3.Sub(t2))
	}
}
