//! Properties of the text forms of IDs: every form gives back the ID it wrote, fixed-width
//! forms sort as text exactly as their IDs sort as numbers, and text that is not an ID in the
//! form is refused, never read as some other ID.

use idmint_core::form::{IdForm, Radix, MAX_PREFIX};
use proptest::prelude::*;

const MAX_ID: u64 = i64::MAX as u64;

fn radixes() -> impl Strategy<Value = Radix> {
    prop::sample::select(Radix::ALL.to_vec())
}

/// Any valid form: a radix, a prefix of the allowed characters, a width (0 is the shortest).
fn forms() -> impl Strategy<Value = IdForm> {
    (
        radixes(),
        "[A-Za-z0-9_-]{0,16}",
        prop::option::of(0usize..=32),
    )
        .prop_map(|(radix, prefix, width)| {
            let form = IdForm::new(radix).with_prefix(&prefix).unwrap();
            match width {
                Some(width) => form.with_width(width).unwrap(),
                None => form,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn every_form_reads_back_what_it_wrote(form in forms(), id in 0..=MAX_ID) {
        let text = form.encode(id);
        prop_assert!(text.starts_with(form.prefix()));
        prop_assert_eq!(form.decode(&text).unwrap(), id);
    }

    #[test]
    fn full_width_forms_sort_as_their_ids(radix in radixes(), prefix in "[a-z_]{0,8}", a in 0..=MAX_ID, b in 0..=MAX_ID) {
        let form = IdForm::new(radix).with_prefix(&prefix).unwrap();
        let (x, y) = (form.encode(a), form.encode(b));
        prop_assert_eq!(x.len(), y.len());
        prop_assert_eq!(x.cmp(&y), a.cmp(&b), "{} {} vs {} {}", a, x, b, y);
    }

    #[test]
    fn case_is_ignored_where_the_alphabet_allows(id in 0..=MAX_ID) {
        for radix in [Radix::Base36, Radix::Base32] {
            let form = IdForm::new(radix);
            let text = form.encode(id);
            prop_assert_eq!(form.decode(&text.to_ascii_lowercase()).unwrap(), id);
            prop_assert_eq!(form.decode(&text.to_ascii_uppercase()).unwrap(), id);
        }
    }

    #[test]
    fn text_that_is_not_an_id_of_the_form_is_refused(form in forms(), text in "\\PC{0,40}") {
        // Either it reads back to an ID whose own text reads the same, or it is refused: no
        // text decodes to a value that is not an ID.
        match form.decode(&text) {
            Ok(id) => {
                prop_assert!(id <= MAX_ID);
                prop_assert_eq!(form.decode(&form.encode(id)).unwrap(), id);
            }
            Err(error) => prop_assert!(error.to_string().contains("invalid argument `id`")),
        }
    }

    #[test]
    fn a_wrong_prefix_is_refused(radix in radixes(), id in 0..=MAX_ID) {
        let ours = IdForm::new(radix).with_prefix("ord_").unwrap();
        let theirs = IdForm::new(radix).with_prefix("usr_").unwrap();
        prop_assert!(ours.decode(&theirs.encode(id)).is_err());
    }

    #[test]
    fn values_above_the_largest_id_are_refused(radix in radixes(), excess in 1u64..=u64::MAX - MAX_ID) {
        let form = IdForm::new(radix).with_width(0).unwrap();
        // The text of MAX_ID + excess, written with the radix's digits by hand.
        let digits: Vec<u8> = match radix {
            Radix::Decimal => b"0123456789".to_vec(),
            Radix::Base62 => b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".to_vec(),
            Radix::Base36 => b"0123456789abcdefghijklmnopqrstuvwxyz".to_vec(),
            Radix::Base32 => b"0123456789ABCDEFGHJKMNPQRSTVWXYZ".to_vec(),
        };
        let base = digits.len() as u64;
        let (mut value, mut text) = (MAX_ID + excess, Vec::new());
        while value > 0 {
            text.push(digits[(value % base) as usize]);
            value /= base;
        }
        text.reverse();
        let text = String::from_utf8(text).unwrap();
        let error = form.decode(&text).unwrap_err().to_string();
        prop_assert!(error.contains("above the largest ID"), "{}", error);
    }
}

#[test]
fn prefixes_and_widths_out_of_bounds_are_refused() {
    let long = "p".repeat(MAX_PREFIX + 1);
    assert!(IdForm::new(Radix::Base62).with_prefix(&long).is_err());
    assert!(IdForm::new(Radix::Base62).with_prefix("a b").is_err());
    assert!(IdForm::new(Radix::Base62).with_width(33).is_err());
    assert!(IdForm::from_parts("base64", None, None).is_err());
}
