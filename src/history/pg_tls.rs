//! TLS to a PostgreSQL store with rustls (no OpenSSL to install), verifying the server as
//! libpq's `sslmode` says: `require`/`prefer` encrypt without checking the certificate
//! (unless a root file is there), `verify-ca` checks its chain, `verify-full` its chain and
//! that it names the host of the URL.

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::pg_connect::{Roots, SslMode, Target};

/// The connector for `sslmode`: none for `disable`. As libpq: `verify-ca` and
/// `verify-full` need CA certificates (`sslrootcert`, else `~/.postgresql/root.crt`) and
/// refuse to go on without; `prefer` and `require` check the chain when there are some and
/// nothing otherwise; `sslrootcert=system` goes with `verify-full` only.
pub fn connector(target: &Target) -> Result<Option<MakeRustlsConnect>> {
    let mode = target.ssl_mode;
    if target.roots == Roots::System && mode != SslMode::VerifyFull {
        bail!(
            "sslmode={} may not be used with sslrootcert=system (as libpq): the system's CAs \
             sign certificates for anyone, so only the host name tells the server apart; use \
             sslmode=verify-full (the default with sslrootcert=system)",
            mode.name()
        );
    }
    if mode == SslMode::Disable {
        return Ok(None);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = match &target.roots {
        Roots::File(file) => Some(read_roots(file)?),
        Roots::System => Some(system_roots()?),
        Roots::Missing(default) if matches!(mode, SslMode::VerifyCa | SslMode::VerifyFull) => {
            bail!(
                "sslmode={}: root certificate file \"{}\" does not exist (as libpq, nothing \
                 is trusted by default): give the CA that signed the server's certificate \
                 with sslrootcert=FILE (or $PGSSLROOTCERT), trust the system's CAs with \
                 sslrootcert=system, or encrypt without verifying the server with \
                 sslmode=require",
                mode.name(),
                default.display()
            )
        }
        Roots::Missing(_) => None,
    };
    let verifier: Arc<dyn ServerCertVerifier> = match roots {
        None => Arc::new(EncryptOnly(provider.clone())),
        Some(roots) => {
            let webpki =
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .build()
                    .context("cannot set up TLS for the PostgreSQL store")?;
            if mode == SslMode::VerifyFull {
                webpki
            } else {
                Arc::new(ChainOnly(webpki))
            }
        }
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("cannot set up TLS for the PostgreSQL store")?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Some(MakeRustlsConnect::new(config)))
}

/// Why rustls refused the server's certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Signed by a trusted CA, but for another host (verify-full only).
    WrongName,
    /// Not signed by a CA of the root file, expired, or otherwise invalid.
    Untrusted,
}

/// The refusal, when `error` (or an error under it) is rustls refusing the certificate.
pub fn certificate_refusal(error: &(dyn std::error::Error + 'static)) -> Option<Refusal> {
    let mut next = Some(error);
    while let Some(e) = next {
        // tokio-rustls wraps rustls's error in an io::Error, whose source skips it.
        let tls = (e.downcast_ref::<std::io::Error>())
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
            .or_else(|| e.downcast_ref::<rustls::Error>());
        if let Some(rustls::Error::InvalidCertificate(why)) = tls {
            return Some(match why {
                CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. } => Refusal::WrongName,
                _ => Refusal::Untrusted,
            });
        }
        next = e.source();
    }
    None
}

/// The CA certificates of a PEM file (a bundle may hold several); only these are trusted.
fn read_roots(file: &Path) -> Result<RootCertStore> {
    let bytes = std::fs::read(file)
        .with_context(|| format!("sslrootcert={}: cannot read it", file.display()))?;
    let certificates = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("sslrootcert={}: not a PEM certificate", file.display()))?;
    if certificates.is_empty() {
        bail!(
            "sslrootcert={}: no certificate in it (expected PEM, -----BEGIN CERTIFICATE-----)",
            file.display()
        );
    }
    let mut roots = RootCertStore::empty();
    for certificate in certificates {
        roots.add(certificate).with_context(|| {
            format!(
                "sslrootcert={}: not a CA certificate TLS can use",
                file.display()
            )
        })?;
    }
    Ok(roots)
}

/// The system's CAs (`sslrootcert=system`): the distribution's bundle, or `$SSL_CERT_FILE`.
fn system_roots() -> Result<RootCertStore> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(found.certs);
    if roots.is_empty() {
        let why = (found.errors.first()).map_or_else(String::new, |e| format!(" ({e})"));
        bail!(
            "sslrootcert=system: no CA certificates found on this system{why}: install the \
             ca-certificates package, or name the CA's file with sslrootcert=FILE"
        );
    }
    Ok(roots)
}

/// `verify-ca`, and `prefer`/`require` with a root file: the chain must lead to a trusted
/// CA, whichever host the certificate names. rustls checks the chain before the name, so a
/// wrong name is the only thing this lets through.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verified =
            self.0
                .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        match verified {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer`/`require` with no root file: encrypted, the certificate not checked (as
/// libpq), but the handshake's signatures still are, so the session key is the server's.
#[derive(Debug)]
struct EncryptOnly(Arc<CryptoProvider>);

impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
