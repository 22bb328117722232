//! The conformance suite (`idmint_core::store::conformance`, written once over the store
//! traits) against every backend, a test per check; and the checks that need a URL rather than
//! the traits (opening a namespace, migrating). What it checks is what uniqueness rests on
//! (docs/ARCHITECTURE.md, "Uniqueness"): ranges never overlap, two holders never share a worker
//! ID, a stale holder can change nothing, a new holder starts above the old one's HWM.

use crate::common;

/// The checks that open stores by URL: backend-specific, so not part of the exported suite.
mod by_url {
    use idmint_core::store::TagSettings;
    use idmint_core::Tag;

    use super::common;

    fn tag(name: &str) -> Tag {
        Tag::new(name).unwrap()
    }

    /// Several nodes opening the same new namespace at once all succeed (schema creation does
    /// not race), and see one schema.
    pub async fn concurrent_opens_of_one_namespace_agree(url: String) {
        let namespace = common::fresh_namespace();
        let opens: Vec<_> = (0..6)
            .map(|_| {
                let (url, options) = (url.clone(), common::options(&namespace));
                tokio::spawn(async move { idmint_store::open(&url, &options).await })
            })
            .collect();
        let mut stores = Vec::new();
        for open in opens {
            stores.push(open.await.unwrap().unwrap());
        }
        let t = tag("shared");
        stores[0]
            .segments
            .create_tag(&t, &TagSettings::default())
            .await
            .unwrap();
        assert!(stores[5].segments.tag_info(&t).await.unwrap().is_some());
    }

    /// Opening again (same namespace) finds the schema in place and the data intact.
    pub async fn migration_rerun_is_a_no_op(url: String) {
        let namespace = common::fresh_namespace();
        let first = idmint_store::open(&url, &common::options(&namespace))
            .await
            .unwrap();
        let t = tag("kept");
        first
            .segments
            .create_tag(&t, &TagSettings::default())
            .await
            .unwrap();
        let range = first.segments.allocate(&t, 7).await.unwrap();
        let second = idmint_store::open(&url, &common::options(&namespace))
            .await
            .unwrap();
        let info = second.segments.tag_info(&t).await.unwrap().unwrap();
        assert_eq!(info.max_id, range.end);
    }
}

/// Stamps out the suite for one backend: `$url` is an expression giving the store URL. Each
/// check runs on a fresh namespace, as a test of its own.
macro_rules! conformance {
    ($backend:ident, $url:expr) => {
        mod $backend {
            use idmint_core::store::conformance::{self as suite, Profile, Subject};

            use super::{by_url, common};

            async fn store() -> Subject {
                let store = common::open(&$url).await.0;
                Subject {
                    segments: store.segments,
                    leases: store.leases,
                }
            }

            conformance!(@checks
                tags_are_case_sensitive,
                tags_of_any_text_are_kept_apart,
                the_end_of_a_tag_is_served_exactly_then_exhausted,
                racers_at_the_end_split_the_rest_exactly,
                acquirers_never_share_a_worker_id,
                stale_tokens_change_nothing_and_hwm_is_handed_over,
                a_node_gets_its_previous_worker_id_back,
                an_hwm_past_the_signed_range_is_refused,
                one_first_space_wins;
                concurrent_allocations_tile_without_overlap,
                give_back_only_when_nobody_allocated_after,
                tags_are_managed_and_unknown_ones_refused,
                a_max_id_past_the_end_is_refused,
                a_static_worker_id_is_refused_while_held,
                id_spaces_are_recorded_and_fence_leases
            );

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn concurrent_opens_of_one_namespace_agree() {
                by_url::concurrent_opens_of_one_namespace_agree($url).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn migration_rerun_is_a_no_op() {
                by_url::migration_rerun_is_a_no_op($url).await;
            }
        }
    };
    // A test per check: those of the first list take the store, those of the second also the
    // profile (a single store on this machine's clock).
    (@checks $($plain:ident),*; $($profiled:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $plain() {
                suite::$plain(store().await).await;
            }
        )*
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $profiled() {
                suite::$profiled(store().await, Profile::SINGLE).await;
            }
        )*
    };
}

conformance!(sqlite, common::sqlite_url());
#[cfg(feature = "postgres")]
conformance!(postgres, common::server_url("IDMINT_TEST_POSTGRES_URL"));
#[cfg(feature = "mysql")]
conformance!(mysql, common::server_url("IDMINT_TEST_MYSQL_URL"));
#[cfg(feature = "redis")]
conformance!(redis, common::server_url("IDMINT_TEST_REDIS_URL"));
