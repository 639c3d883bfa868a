package authserver_test

import (
	"os"
	"testing"

	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"
)

// TestMain stops the temporary PostgreSQL server of the tests that run
// several instances on one database (storetest.Postgres), if one started.
func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }
