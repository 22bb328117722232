package idmint

import (
	"errors"
	"strings"
	"testing"
)

// The vectors of crates/idmint-core/src/form.rs's own tests.
func TestFormsAsFormRsWritesAndReadsThem(t *testing.T) {
	for r, want := range map[Radix]int{Decimal: 19, Base62: 11, Base36: 13, Base32: 13} {
		if r.FullWidth() != want {
			t.Errorf("%s: full width %d, want %d", r, r.FullWidth(), want)
		}
		f := NewForm(r)
		text := f.Encode(maxID)
		if len(text) != want {
			t.Errorf("%s: %q", r, text)
		}
		if back, err := f.Decode(text); err != nil || back != maxID {
			t.Errorf("%s: %d %v", r, back, err)
		}
	}
	if got := NewForm(Base62).Encode(61); got != "0000000000z" {
		t.Error(got)
	}
	short36, _ := NewForm(Base36).WithWidth(0)
	if got := short36.Encode(35); got != "z" {
		t.Error(got)
	}
	ulid, _ := NewForm(Base32).WithWidth(0)
	if got := ulid.Encode(32); got != "10" {
		t.Error(got)
	}
	for text, want := range map[string]int64{"1o": 32, "i-L": 33} {
		if got, err := ulid.Decode(text); err != nil || got != want {
			t.Errorf("%q: %d %v", text, got, err)
		}
	}
	if _, err := ulid.Decode("1U"); err == nil {
		t.Error("U read")
	}
	order, _ := NewForm(Decimal).WithPrefix("ord_")
	if got := order.Encode(42); got != "ord_0000000000000000042" {
		t.Error(got)
	}
	if got, err := order.Decode("ord_42"); err != nil || got != 42 {
		t.Error(got, err)
	}
	if (Form{}).Encode(7) != "7" {
		t.Error("the zero Form is not plain decimal")
	}
}

func TestBadTextIsRefusedWithAReason(t *testing.T) {
	f, _ := NewForm(Base62).WithPrefix("u_")
	for text, says := range map[string]string{
		"x_1":            "prefix `u_`",
		"u_":             "no base62 digits",
		"u_1!":           "character 4",
		"u_zzzzzzzzzzzz": "above the largest ID",
	} {
		_, err := f.Decode(text)
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), says) {
			t.Errorf("%q: %v, want it to say %q", text, err, says)
		}
	}
	if _, err := NewForm(Base62).WithPrefix("é"); err == nil {
		t.Error("a non-ASCII prefix was taken")
	}
	if _, err := NewForm(Base62).WithPrefix(strings.Repeat("a", 17)); err == nil {
		t.Error("a 17-byte prefix was taken")
	}
	if _, err := NewForm(Base62).WithWidth(33); err == nil {
		t.Error("width 33 was taken")
	}
	if _, err := ParseRadix("base64"); err == nil {
		t.Error("base64 read")
	}
	for name, want := range map[string]Radix{"ULID": Base32, " dec ": Decimal, "62": Base62, "base36": Base36} {
		if r, err := ParseRadix(name); err != nil || r != want {
			t.Errorf("%q: %v %v", name, r, err)
		}
	}
	f, err := FormFromParts("base62", "ord_", 12)
	if err != nil || f.String() != "base62 prefix=ord_ width=12" {
		t.Errorf("%v %v", f, err)
	}
	if f, _ := FormFromParts("base36", "", -1); f.String() != "base36" {
		t.Errorf("%v", f)
	}
}

// The node writes IDs in each form; the client reads them back as the IDs they are and
// writes them the same.
func TestFormsAgreeWithTheNode(t *testing.T) {
	n := startNode(t, sqliteStore(t))
	for _, r := range []Radix{Decimal, Base62, Base36, Base32} {
		for _, prefix := range []string{"", "ord_"} {
			tag := "form_" + r.String() + prefix
			args := []string{"IDMINT.NEXT", tag, "COUNT", "3", "FORMAT", strings.ToUpper(r.String())}
			if prefix != "" {
				args = append(args, "PREFIX", prefix)
			}
			v, err := n.command(args...)
			if err != nil || v.kind != '*' || len(v.array) != 3 {
				t.Fatalf("%v: %s %v", args, v.describe(), err)
			}
			f, _ := NewForm(r).WithPrefix(prefix)
			for i, item := range v.array {
				id, err := f.Decode(item.str)
				if err != nil || id != int64(i+1) {
					t.Errorf("%s: %q read as %d %v", f, item.str, id, err)
				}
				if f.Encode(id) != item.str {
					t.Errorf("%s: %d written %q, the node wrote %q", f, id, f.Encode(id), item.str)
				}
			}
		}
	}
}
