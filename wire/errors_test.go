package wire_test

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/wire"
)

func TestStatusRoundTrip(t *testing.T) {
	for _, c := range catalog.All() {
		t.Run(c.Code, func(t *testing.T) {
			orig := fmt.Errorf("doing something with /some/path: %w", c)
			st := wire.ToStatus(orig)
			s, ok := status.FromError(st)
			if !ok {
				t.Fatalf("ToStatus returned a non-status error %T", st)
			}
			if s.Code() != codes.Code(c.GRPC) {
				t.Errorf("status code %v, want %v", s.Code(), c.GRPC)
			}
			back, fromDaemon := wire.FromStatus(st)
			if !fromDaemon {
				t.Fatal("FromStatus did not find the catalog detail")
			}
			if !errors.Is(back, c) {
				t.Errorf("round trip lost the class: got %v (class %s)", back, catalog.ClassOf(back).Code)
			}
			for _, other := range catalog.All() {
				if other != c && errors.Is(back, other) {
					t.Errorf("round trip also matches %s", other.Code)
				}
			}
			if back.Error() != orig.Error() {
				t.Errorf("message changed: %q -> %q", orig.Error(), back.Error())
			}
			if catalog.ExitCode(back) != c.Exit {
				t.Errorf("ExitCode %d, want %d", catalog.ExitCode(back), c.Exit)
			}
		})
	}
}

func TestFromStatusWithoutDetail(t *testing.T) {
	plain := status.Error(codes.Unavailable, "connection refused")
	back, fromDaemon := wire.FromStatus(plain)
	if fromDaemon {
		t.Error("a status without detail was taken as the daemon's")
	}
	if back != plain {
		t.Errorf("FromStatus changed a transport error: %v", back)
	}
	notStatus := errors.New("plain")
	if back, ok := wire.FromStatus(notStatus); ok || back != notStatus {
		t.Errorf("FromStatus(plain error) = %v, %v", back, ok)
	}
	if wire.ToStatus(nil) != nil || wire.ErrorOf(nil) != nil || wire.ErrorFrom(nil) != nil {
		t.Error("nil must map to nil")
	}
}
