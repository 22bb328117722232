//! TLS on both listeners (rustls, with ring): the certificate chain and key are read from PEM
//! files at start and again on [`Tls::reload`] (SIGHUP), so a renewed certificate is served to
//! new connections without a restart; connections already open keep theirs. A reload that
//! fails (a missing file, a key that does not match) keeps the certificate in use.
//!
//! The handshake runs in the connection's task, within the listener's `auth_timeout`: a client
//! that opens a connection and never finishes its handshake is closed like a silent one.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio_rustls::rustls::crypto::ring::{default_provider, sign::any_supported_type};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::{ClientHello, ResolvesServerCert};
use tokio_rustls::rustls::sign::CertifiedKey;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

use crate::config::TlsFiles;
use crate::error::ServerError;

/// The certificate in use, swapped whole on reload.
struct CurrentCert(ArcSwap<CertifiedKey>);

impl fmt::Debug for CurrentCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CurrentCert")
    }
}

impl ResolvesServerCert for CurrentCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.load_full())
    }
}

/// TLS for the listeners: one acceptor per protocol over one reloadable certificate.
#[derive(Clone)]
pub struct Tls {
    files: TlsFiles,
    current: Arc<CurrentCert>,
    /// For HTTP: offers `http/1.1` by ALPN.
    http: TlsAcceptor,
    /// For the Redis protocol: no ALPN.
    resp: TlsAcceptor,
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls").field("files", &self.files).finish()
    }
}

impl Tls {
    /// Reads `files`; errors name the setting and the file.
    pub fn load(files: &TlsFiles) -> Result<Self, ServerError> {
        let current = Arc::new(CurrentCert(ArcSwap::new(read_certified_key(files)?)));
        let config = |alpn: &[&[u8]]| -> Result<Arc<ServerConfig>, ServerError> {
            let mut config = ServerConfig::builder_with_provider(Arc::new(default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(|error| refused("tls-cert", error.to_string()))?
                .with_no_client_auth()
                .with_cert_resolver(Arc::clone(&current) as Arc<dyn ResolvesServerCert>);
            config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
            Ok(Arc::new(config))
        };
        Ok(Self {
            http: TlsAcceptor::from(config(&[b"http/1.1"])?),
            resp: TlsAcceptor::from(config(&[])?),
            files: files.clone(),
            current,
        })
    }

    /// Reads the files again; on success new connections get the new certificate.
    pub fn reload(&self) -> Result<(), ServerError> {
        self.current.0.store(read_certified_key(&self.files)?);
        Ok(())
    }

    /// The acceptor of the HTTP listener.
    pub(crate) fn http(&self) -> &TlsAcceptor {
        &self.http
    }

    /// The acceptor of the Redis-protocol listener.
    pub(crate) fn resp(&self) -> &TlsAcceptor {
        &self.resp
    }
}

fn refused(setting: &str, reason: String) -> ServerError {
    ServerError::Config {
        setting: setting.into(),
        reason,
    }
}

/// The chain and key of `files`, checked to belong together.
fn read_certified_key(files: &TlsFiles) -> Result<Arc<CertifiedKey>, ServerError> {
    let named = |path: &Path, error: &dyn fmt::Display| format!("{}: {error}", path.display());
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|error| refused("tls-cert", named(&files.cert, &error)))?
        .collect::<Result<_, _>>()
        .map_err(|error| refused("tls-cert", named(&files.cert, &error)))?;
    if chain.is_empty() {
        return Err(refused(
            "tls-cert",
            named(&files.cert, &"holds no PEM certificate"),
        ));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|error| refused("tls-key", named(&files.key, &error)))?;
    let key =
        any_supported_type(&key).map_err(|error| refused("tls-key", named(&files.key, &error)))?;
    let certified = CertifiedKey::new(chain, key);
    certified.keys_match().map_err(|error| {
        refused(
            "tls-key",
            format!(
                "{} does not belong to the certificate {}: {error}",
                files.key.display(),
                files.cert.display()
            ),
        )
    })?;
    Ok(Arc::new(certified))
}
