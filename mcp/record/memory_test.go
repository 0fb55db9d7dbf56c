package record_test

import (
	"testing"

	"github.com/contextd/contextd/mcp/record"
	"github.com/contextd/contextd/mcp/record/recordtest"
)

func TestMemoryStoreContract(t *testing.T) {
	recordtest.Run(t, func(*testing.T) recordtest.Store { return &record.MemoryStore{} })
}
