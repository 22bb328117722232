package idmint

import (
	"errors"
	"net"
	"testing"
)

func TestIDsOutsideTheContractAreNeverHandedOut(t *testing.T) {
	for _, tc := range []struct{ name, reply string }{
		{"above int64", rangeReply("18446744073709551615", "18446744073709551615")},
		{"2^63", rangeReply("9223372036854775808", "9223372036854775808")},
		{"negative", rangeReply("-20", "-11")},
		{"zero", rangeReply("0", "9")},
		{"backwards", rangeReply("20", "11")},
		{"longer than asked", rangeReply("1", "11")},
		{"one integer", ":5\r\n"},
		{"three integers", "*3\r\n:1\r\n:2\r\n:3\r\n"},
		{"strings", "*2\r\n$1\r\n1\r\n$2\r\n10\r\n"},
		{"null", "*-1\r\n"},
		{"OK", "+OK\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := startFake(t, func(w net.Conn, args []string) bool {
				w.Write([]byte(tc.reply))
				return true
			})
			c := newClient(t, quick(fake.url()))
			id, err := c.Next(bg, "t")
			if err == nil {
				t.Fatalf("handed out %d", id)
			}
			if !errors.Is(err, ErrBadReply) && !errors.Is(err, ErrUnavailable) {
				t.Errorf("%v", err)
			}
		})
	}
	t.Run("below ABOVE", func(t *testing.T) {
		fake := startFake(t, func(w net.Conn, args []string) bool {
			w.Write([]byte(rangeReply("1", "10"))) // the same range every time
			return true
		})
		c := newClient(t, quick(fake.url()))
		for want := int64(1); want <= 10; want++ {
			if id, err := c.Next(bg, "t"); err != nil || id != want {
				t.Fatalf("%d %v, want %d", id, err, want)
			}
		}
		if id, err := c.Next(bg, "t"); !errors.Is(err, ErrBadReply) {
			t.Fatalf("%d %v, want ErrBadReply", id, err)
		}
	})
}

// A reply of the wrong shape is that node's failure, as the Rust client reads it (its reply
// does not convert): the next node is asked, and the client stays there.
func TestAWrongShapeIsThatNodesFailureAndTheNextNodeServes(t *testing.T) {
	// Each the wrong shape for IDMINT.RANGE, IDMINT.SNOWFLAKE and IDMINT.NEXT alike.
	for _, reply := range []string{"+OK\r\n", ":-5\r\n", "*-1\r\n", "$2\r\nhi\r\n",
		"*2\r\n:-5\r\n:-1\r\n", "*2\r\n$1\r\n1\r\n$1\r\n2\r\n"} {
		broken := startFake(t, func(w net.Conn, args []string) bool {
			w.Write([]byte(reply))
			return true
		})
		good := startFake(t, func(w net.Conn, args []string) bool {
			if answerSpace(w, args) {
				return true
			}
			switch args[0] {
			case "IDMINT.RANGE":
				w.Write([]byte(rangeReply("101", "110")))
			case "IDMINT.SNOWFLAKE":
				w.Write([]byte("*2\r\n:7\r\n:8\r\n"))
			case "IDMINT.NEXT":
				w.Write([]byte(":2026010100001\r\n"))
			}
			return true
		})
		c := newClient(t, quick(broken.url(), good.url()))
		if id, err := c.Next(bg, "t"); err != nil || id != 101 {
			t.Errorf("%q: Next %d %v, want 101 from the next node", reply, id, err)
		}
		if id, err := c.Snowflake(bg); err != nil || id != 7 {
			t.Errorf("%q: Snowflake %d %v, want 7 from the next node", reply, id, err)
		}
		if id, err := c.datedNext(bg, "d"); err != nil || id != 2026010100001 {
			t.Errorf("%q: dated %d %v, want it from the next node", reply, id, err)
		}
	}
}
