//! TLS to the PostgreSQL server, with the meanings libpq gives `sslmode` and `sslrootcert`, so
//! that an address that works with psql means the same here:
//! - `disable`: no TLS;
//! - `prefer` (the default, and `allow`): TLS when the server offers it, its certificate not
//!   checked (it keeps the traffic from being read on the way, not from a server in between);
//! - `require`: TLS or no connection, the certificate not checked, unless `sslrootcert` is
//!   given, which makes it `verify-ca`;
//! - `verify-ca`: the certificate must be signed by a trusted authority;
//! - `verify-full`: that, and it must name the host the address gives.
//!
//! The authorities trusted are those in the `sslrootcert` file, or, without one (or with
//! `sslrootcert=system`), the Mozilla roots the rest of Gleaner trusts.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::engine::queue::QueueError;

/// How much of the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Check {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl Check {
    /// The libpq `sslmode` this acts as, for sentences (`require` with a root file is `verify-ca`).
    pub(super) fn mode_name(self) -> &'static str {
        match self {
            Check::Disable => "disable",
            Check::Prefer => "prefer",
            Check::Require => "require",
            Check::VerifyCa => "verify-ca",
            Check::VerifyFull => "verify-full",
        }
    }

    /// The `sslmode` tokio-postgres is given: it knows whether to ask for TLS, not how to check.
    fn driver_param(self) -> &'static str {
        match self {
            Check::Disable => "sslmode=disable",
            Check::Prefer => "sslmode=prefer",
            Check::Require | Check::VerifyCa | Check::VerifyFull => "sslmode=require",
        }
    }
}

/// An address's TLS settings: the address as the driver reads it, and how to connect.
pub(super) struct Tls {
    pub(super) driver_url: String,
    pub(super) check: Check,
    pub(super) connector: MakeRustlsConnect,
}

/// Not the address: it holds the password.
impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("check", &self.check)
            .finish_non_exhaustive()
    }
}

/// Take `sslmode` and `sslrootcert` out of the address (the driver knows neither
/// `verify-*` nor `sslrootcert`), and make the connector they ask for.
pub(super) fn from_url(url: &str) -> Result<Tls, QueueError> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let (mut mode, mut root) = (None, None);
    // Other parameters pass through as written: re-encoding them could change their meaning.
    let mut kept: Vec<&str> = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let decoded = || {
            percent_encoding::percent_decode_str(value)
                .decode_utf8_lossy()
                .into_owned()
        };
        match key {
            "sslmode" => mode = Some(decoded()),
            "sslrootcert" => root = Some(decoded()),
            _ => kept.push(pair),
        }
    }
    let check = match mode.as_deref() {
        None | Some("prefer" | "allow") => Check::Prefer,
        Some("disable") => Check::Disable,
        Some("require") if root.is_some() => Check::VerifyCa,
        Some("require") => Check::Require,
        Some("verify-ca") => Check::VerifyCa,
        Some("verify-full") => Check::VerifyFull,
        Some(other) => {
            return Err(QueueError::Connect(format!(
                "sslmode={other} is not a TLS setting Gleaner knows: give disable, prefer, \
                 require, verify-ca or verify-full"
            )));
        }
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| QueueError::Connect(format!("cannot set up TLS: {e}")))?;
    let config = match check {
        Check::Disable | Check::Prefer | Check::Require => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Unchecked(provider)))
            .with_no_client_auth(),
        Check::VerifyCa | Check::VerifyFull => {
            let roots = Arc::new(trusted_roots(root.as_deref())?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| QueueError::Connect(format!("cannot set up TLS: {e}")))?;
            let verifier: Arc<dyn ServerCertVerifier> = if check == Check::VerifyCa {
                Arc::new(AnyName(webpki))
            } else {
                webpki
            };
            builder
                .dangerous()
                .with_custom_certificate_verifier(verifier)
                .with_no_client_auth()
        }
    };
    kept.push(check.driver_param());
    Ok(Tls {
        driver_url: format!("{base}?{}", kept.join("&")),
        check,
        connector: MakeRustlsConnect::new(config),
    })
}

/// The authorities a `verify-*` connection trusts.
fn trusted_roots(file: Option<&str>) -> Result<RootCertStore, QueueError> {
    let mut roots = RootCertStore::empty();
    let Some(path) = file.filter(|f| *f != "system") else {
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        return Ok(roots);
    };
    let unreadable = |why: String| {
        QueueError::Connect(format!(
            "cannot use the root certificate file {path} (sslrootcert): {why}"
        ))
    };
    let pem = std::fs::read(path).map_err(|e| unreadable(e.to_string()))?;
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| unreadable(format!("{e:?}")))?;
        roots.add(cert).map_err(|e| unreadable(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(unreadable("it holds no PEM certificate".into()));
    }
    Ok(roots)
}

/// `prefer` and `require`: any certificate, as libpq takes it; the handshake's signatures are
/// still checked, so the session is with the holder of the certificate's key.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
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
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain must lead to a trusted authority, whatever host the certificate names.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // The name is checked after the chain, so a name error means the chain was good.
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::postgres::PgStore;
    use crate::engine::postgres::testing::{fresh_database_url, test_root_cert};

    /// Whether the store's connections to the server are encrypted, as the server sees them.
    fn encrypted(store: &PgStore) -> bool {
        store
            .block(|| async {
                let c = store.db.client().await?;
                let row = c
                    .query_one(
                        "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                        &[],
                    )
                    .await?;
                Ok(row.get::<_, bool>(0))
            })
            .expect("the connection's TLS")
    }

    fn open_with(url: &str, params: &str) -> Result<PgStore, QueueError> {
        PgStore::open(&format!("{url}&{params}"), "m")
    }

    fn refused(url: &str, params: &str) -> String {
        match open_with(url, params) {
            Ok(_) => panic!("{params}: connected"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn the_address_keeps_its_other_parameters_as_written_for_the_driver() {
        let tls = from_url("postgres://u@h/db?options=-c%20search_path%3Dx&sslmode=verify-full")
            .expect("address");
        assert_eq!(
            tls.driver_url,
            "postgres://u@h/db?options=-c%20search_path%3Dx&sslmode=require"
        );
        assert_eq!(tls.check, Check::VerifyFull);
        let plain = from_url("postgres://u@h/db").expect("address");
        assert_eq!(
            (plain.driver_url.as_str(), plain.check),
            ("postgres://u@h/db?sslmode=prefer", Check::Prefer)
        );
        // libpq: require with an authority to check against is verify-ca.
        let root = test_root_cert();
        let ca = from_url(&format!(
            "postgres://u@h/db?sslmode=require&sslrootcert={}",
            root.display()
        ))
        .expect("address");
        assert_eq!(ca.check, Check::VerifyCa);
    }

    #[test]
    fn connections_are_encrypted_unless_the_address_says_disable() {
        let url = fresh_database_url();
        let store = PgStore::open(&url, "m").expect("default address");
        assert!(encrypted(&store), "sslmode=prefer is the default");
        let store = open_with(&url, "sslmode=disable").expect("sslmode=disable");
        assert!(!encrypted(&store));
        let store = open_with(&url, "sslmode=require").expect("sslmode=require");
        assert!(encrypted(&store));
    }

    #[test]
    fn verify_full_connects_to_a_server_whose_certificate_the_given_authority_signed() {
        let url = fresh_database_url();
        let root = test_root_cert();
        let store = open_with(
            &url,
            &format!("sslmode=verify-full&sslrootcert={}", root.display()),
        )
        .expect("verify-full with the server's authority");
        assert!(encrypted(&store));
    }

    #[test]
    fn a_certificate_from_an_authority_not_trusted_is_refused_with_what_to_give() {
        let url = fresh_database_url();
        let e = refused(&url, "sslmode=verify-full");
        assert!(
            e.contains("not signed by an authority this machine trusts")
                && e.contains("sslrootcert="),
            "{e}"
        );
        let other = test_root_cert().with_file_name("other-root.crt");
        let e = refused(
            &url,
            &format!("sslmode=verify-ca&sslrootcert={}", other.display()),
        );
        assert!(e.contains("not signed by an authority"), "{e}");
    }

    #[test]
    fn verify_full_checks_the_host_name_and_verify_ca_does_not() {
        let url = fresh_database_url().replacen("@127.0.0.1:", "@wrong.example:", 1);
        let root = test_root_cert();
        let e = refused(
            &url,
            &format!(
                "hostaddr=127.0.0.1&sslmode=verify-full&sslrootcert={}",
                root.display()
            ),
        );
        assert!(e.contains("certificate is for another host name"), "{e}");
        let store = open_with(
            &url,
            &format!(
                "hostaddr=127.0.0.1&sslmode=verify-ca&sslrootcert={}",
                root.display()
            ),
        )
        .expect("verify-ca with the server's authority");
        assert!(encrypted(&store));
    }

    /// A server on loopback that answers every TLS request "no" (as one without TLS does) and
    /// hangs up: an address that asks for TLS says so, and one that prefers it goes on without.
    #[test]
    fn a_server_without_tls_is_refused_when_the_address_requires_it() {
        use std::io::{Read as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let asked = std::thread::spawn(move || {
            let (mut socket, _) = listener.accept().expect("a connection");
            let mut request = [0u8; 8];
            socket.read_exact(&mut request).expect("the TLS request");
            socket.write_all(b"N").expect("answer");
            request
        });
        let url = format!("postgres://ann:s3cret@127.0.0.1:{port}/lab?connect_timeout=5");
        let e = refused(&url, "sslmode=verify-full").to_string();
        assert!(
            e.contains(
                "the server does not offer TLS, and the address asks for it (sslmode=verify-full)"
            ) && !e.contains("s3cret"),
            "{e}"
        );
        // SSLRequest: length 8, code 80877103.
        let request = asked.join().expect("server");
        assert_eq!(request, [0, 0, 0, 8, 4, 210, 22, 47]);
    }

    #[test]
    fn a_bad_tls_setting_is_a_sentence_and_nothing_connects() {
        let url = fresh_database_url();
        let e = refused(&url, "sslmode=verify-everything");
        assert!(
            e.contains("sslmode=verify-everything is not a TLS setting"),
            "{e}"
        );
        let e = refused(&url, "sslmode=verify-full&sslrootcert=/no/such/root.crt");
        assert!(
            e.contains("cannot use the root certificate file /no/such/root.crt"),
            "{e}"
        );
        let not_pem = test_root_cert().with_file_name("server.ext");
        let e = refused(
            &url,
            &format!("sslmode=verify-full&sslrootcert={}", not_pem.display()),
        );
        assert!(e.contains("holds no PEM certificate"), "{e}");
    }
}
