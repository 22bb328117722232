package idmint

// IDs as text: decimal, base62, base36 and Crockford's base32 (the ULID alphabet), with an
// optional prefix and a fixed width, and back, exactly as the nodes write them for `format=`
// and FORMAT (crates/idmint-core/src/form.rs).
//
// Each alphabet lists its digits in ASCII order, so IDs written at one fixed width sort as
// text exactly as they sort as numbers. That is the default: every form pads to the width that
// holds any 63-bit ID (Radix.FullWidth). Width 0 writes the shortest text instead (shorter,
// but "z" > "10" as text), and a larger width pads more.
//
// Reading is as forgiving as the alphabet allows and no more: base36 and base32 ignore case,
// base32 also reads I and L as 1, O as 0 and skips hyphens (Crockford's rules); base62 is
// case-sensitive, since case is half its digits. Anything else (an empty text, a wrong prefix,
// a character outside the alphabet, a value above the largest ID) is refused, saying which.

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Radix is the digits of a Form.
type Radix int

// The radixes.
const (
	// Decimal is 0-9.
	Decimal Radix = iota
	// Base62 is 0-9A-Za-z (case-sensitive).
	Base62
	// Base36 is 0-9a-z (written lowercase, read in either case).
	Base36
	// Base32 is Crockford's 0-9A-HJKMNP-TV-Z (no I, L, O, U), the ULID alphabet.
	Base32
)

// MaxPrefix is the longest prefix accepted, in bytes.
const MaxPrefix = 16

// MaxWidth is the widest fixed width accepted, in digits.
const MaxWidth = 32

var radixDigits = [...]string{
	Decimal: "0123456789",
	Base62:  "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
	Base36:  "0123456789abcdefghijklmnopqrstuvwxyz",
	Base32:  "0123456789ABCDEFGHJKMNPQRSTVWXYZ",
}

var radixNames = [...]string{Decimal: "decimal", Base62: "base62", Base36: "base36", Base32: "base32"}

func (r Radix) valid() bool { return r >= Decimal && r <= Base32 }

// String is the name used in settings and requests: decimal, base62, base36, base32.
func (r Radix) String() string {
	if !r.valid() {
		return fmt.Sprintf("Radix(%d)", int(r))
	}
	return radixNames[r]
}

func (r Radix) base() uint64 { return uint64(len(radixDigits[r])) }

// FullWidth is the number of digits that hold every 63-bit ID: 19, 11, 13 and 13.
func (r Radix) FullWidth() int {
	width := 1
	for max := uint64(maxID); max >= r.base(); max /= r.base() {
		width++
	}
	return width
}

// valueOf is the value of one character by the radix's reading rules, or false.
func (r Radix) valueOf(c byte) (uint64, bool) {
	switch {
	case c >= '0' && c <= '9':
		return uint64(c - '0'), true
	case r == Base62 && c >= 'A' && c <= 'Z':
		return uint64(c-'A') + 10, true
	case r == Base62 && c >= 'a' && c <= 'z':
		return uint64(c-'a') + 36, true
	case r == Base36 && c >= 'a' && c <= 'z':
		return uint64(c-'a') + 10, true
	case r == Base36 && c >= 'A' && c <= 'Z':
		return uint64(c-'A') + 10, true
	case r == Base32:
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		switch c {
		case 'I', 'L':
			return 1, true
		case 'O':
			return 0, true
		}
		if i := strings.IndexByte(radixDigits[Base32], c); i >= 0 {
			return uint64(i), true
		}
	}
	return 0, false
}

// ParseRadix reads a radix's name: decimal (dec, 10), base62 (62), base36 (36), base32 (32,
// crockford, ulid), in any case.
func ParseRadix(name string) (Radix, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "decimal", "dec", "10":
		return Decimal, nil
	case "base62", "62":
		return Base62, nil
	case "base36", "36":
		return Base36, nil
	case "base32", "32", "crockford", "ulid":
		return Base32, nil
	}
	return Decimal, invalid("format", fmt.Sprintf("`%s` is not a form: decimal, base62, base36 or base32", name))
}

// Form is how IDs are written as text: a radix, a prefix and a width. The zero Form is plain
// decimal, as IDs are written everywhere else.
type Form struct {
	radix  Radix
	prefix string
	width  int // digits written at least (zeros in front); 0 for the shortest text
}

// NewForm is radix at its full width (sortable as text), no prefix.
func NewForm(radix Radix) Form {
	if !radix.valid() {
		radix = Decimal
	}
	return Form{radix: radix, width: radix.FullWidth()}
}

// FormFromParts is a form from the names requests use: format (a radix name), prefix, and
// width (digits; a negative width means the radix's full width).
func FormFromParts(format, prefix string, width int) (Form, error) {
	radix, err := ParseRadix(format)
	if err != nil {
		return Form{}, err
	}
	form, err := NewForm(radix).WithPrefix(prefix)
	if err != nil || width < 0 {
		return form, err
	}
	return form.WithWidth(width)
}

// WithPrefix is the same form with a prefix: up to MaxPrefix bytes of A-Z a-z 0-9 _ -,
// written before the digits and required when reading.
func (f Form) WithPrefix(prefix string) (Form, error) {
	ok := len(prefix) <= MaxPrefix
	for i := 0; ok && i < len(prefix); i++ {
		c := prefix[i]
		ok = c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
	}
	if !ok {
		return f, invalid("prefix", fmt.Sprintf("a prefix is up to %d characters of A-Z a-z 0-9 _ -", MaxPrefix))
	}
	f.prefix = prefix
	return f, nil
}

// WithWidth is the same form at another width: 0 writes the shortest text (not sortable as
// text); a width below the radix's full width sorts only the IDs that fit it.
func (f Form) WithWidth(width int) (Form, error) {
	if width < 0 || width > MaxWidth {
		return f, invalid("width", fmt.Sprintf("%d is not between 0 and the widest, %d", width, MaxWidth))
	}
	f.width = width
	return f, nil
}

// Radix is the form's radix.
func (f Form) Radix() Radix { return f.radix }

// Prefix is the form's prefix (may be empty).
func (f Form) Prefix() string { return f.prefix }

// Width is the form's width in digits (0 for the shortest).
func (f Form) Width() int { return f.width }

// Encode writes id in this form. IDs are never negative; a negative value is written as the
// unsigned 64-bit number with the same bits, which Decode refuses.
func (f Form) Encode(id int64) string {
	return string(f.AppendEncode(make([]byte, 0, len(f.prefix)+20), id))
}

// AppendEncode appends id in this form to dst.
func (f Form) AppendEncode(dst []byte, id int64) []byte {
	digits := radixDigits[f.radix]
	base := f.radix.base()
	var buffer [64]byte
	at := len(buffer)
	for rest := uint64(id); ; {
		at--
		buffer[at] = digits[rest%base]
		rest /= base
		if rest == 0 {
			break
		}
	}
	dst = append(dst, f.prefix...)
	for written := len(buffer) - at; written < f.width; written++ {
		dst = append(dst, '0')
	}
	return append(dst, buffer[at:]...)
}

// Decode reads the ID text holds in this form.
func (f Form) Decode(text string) (int64, error) {
	shown := shortenChars(text)
	if len(text) > len(f.prefix)+MaxWidth+16 {
		return 0, invalid("id", fmt.Sprintf("`%s` is too long to be an ID", shown))
	}
	if !strings.HasPrefix(text, f.prefix) {
		return 0, invalid("id", fmt.Sprintf("`%s` does not start with the prefix `%s`", shown, f.prefix))
	}
	body := text[len(f.prefix):]
	base := f.radix.base()
	var value uint64
	digits := 0
	for i := 0; i < len(body); i++ {
		c := body[i]
		if f.radix == Base32 && c == '-' {
			continue
		}
		v, ok := f.radix.valueOf(c)
		if !ok {
			r, _ := utf8.DecodeRuneInString(body[i:])
			if r == utf8.RuneError || r < utf8.RuneSelf {
				r = rune(c)
			}
			return 0, invalid("id", fmt.Sprintf("`%s`: character %d (%q) is not a %s digit",
				shown, len(f.prefix)+i+1, r, f.radix))
		}
		if value > (maxID-v)/base {
			return 0, invalid("id", fmt.Sprintf("`%s` is above the largest ID, %d", shown, int64(maxID)))
		}
		value = value*base + v
		digits++
	}
	if digits == 0 {
		return 0, invalid("id", fmt.Sprintf("`%s` has no %s digits", shown, f.radix))
	}
	return int64(value), nil
}

// String is the form as the nodes show it: `base62`, `base62 prefix=ord_ width=12` (the
// parts that differ from the radix's default).
func (f Form) String() string {
	var b strings.Builder
	b.WriteString(f.radix.String())
	if f.prefix != "" {
		b.WriteString(" prefix=" + f.prefix)
	}
	if f.width != f.radix.FullWidth() {
		fmt.Fprintf(&b, " width=%d", f.width)
	}
	return b.String()
}

// shortenChars is at most 40 characters of text, for messages.
func shortenChars(text string) string {
	n := 0
	for i := range text {
		if n == 40 {
			return text[:i] + "…"
		}
		n++
	}
	return text
}

// invalid is an argument refused, named.
func invalid(name, reason string) *Error {
	return &Error{Kind: ErrInvalidArgument, Code: "invalid_argument", message: name + ": " + reason}
}
