//! TLS on every cluster connection (docs/cluster.md, "TLS"): a cluster started with the
//! certificates `scheduler/certs.sh` makes gives the local run's rows, and every caller in
//! clear text, or checking against another CA, is refused in one line.

use crate::cluster::{cluster_certs, executor_refused, http_get, start_with, Setup};
use crate::dedup::{jsonl, planted, rejected, run_dedup};
use crate::util::*;

/// What a Flight call to an executor gets: over TLS checked against `member`'s CA, or in clear
/// text; `Ok` holds the service's own answer to an unknown ticket, `Err` a failed connection.
fn flight_call(port: u16, member: &tokq_engine::cluster::Credentials, tls: bool) -> Result<String, String> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut endpoint = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}")).unwrap();
        if tls {
            endpoint = member.tls.as_ref().unwrap().secure(endpoint).unwrap();
        }
        endpoint = endpoint.user_agent(member.secret.as_ref().unwrap().user_agent()).unwrap();
        let channel = endpoint.connect().await.map_err(|e| format!("{e:?}"))?;
        let mut client = arrow_flight::flight_service_client::FlightServiceClient::new(channel);
        let ticket = arrow_flight::Ticket { ticket: "not a ticket".into() };
        match client.do_get(ticket).await {
            // A status made of a transport error (h2 refusing what it read) is no answer.
            Err(e) if std::error::Error::source(&e).is_some() => Err(format!("{e:?}")),
            Err(e) => Ok(format!("{e:?}")),
            Ok(_) => Ok("a stream".into()),
        }
    })
}

#[test]
fn a_tls_cluster_gives_the_local_rows_and_refuses_clear_text() {
    let tmp = tempfile::tempdir().unwrap();
    let certs = cluster_certs(&tmp.path().join("certs"));
    let secret = write(tmp.path(), "secret", "zebra-quartz-lantern-0451-orbit\n");
    let cluster = start_with(2, Setup { secret: Some(&secret), tls: Some(&certs), ..Setup::default() });
    let url = cluster.url();
    let (ca, secret_arg) = (certs.join("ca.pem").display().to_string(), secret.display().to_string());

    // Dedup shuffles between the executors, which fetch each other's data over TLS; the client
    // submits over TLS and fetches the results from an executor over TLS. The rows are the local run's.
    let (docs, _) = planted();
    let input = write(tmp.path(), "docs.jsonl", jsonl(&docs));
    let (local, remote) = (tmp.path().join("local"), tmp.path().join("remote"));
    run_dedup(&local, &input, &["--partitions", "2"]);
    run_dedup(&remote, &input, &["--cluster", &url, "--partitions", "2", "--secret-file", &secret_arg, "--tls-ca", &ca]);
    assert_eq!(rejected(&local), rejected(&remote));
    assert_eq!(read_output(&local.join("out")).batch.num_rows(), read_output(&remote.join("out")).batch.num_rows());

    // A client in clear text, or one that checks against another CA, fails at once in one line;
    // no job is submitted.
    let recipe = write(tmp.path(), "r.sql", format!("COPY (SELECT 1 AS a) TO '{}/never/' STORED AS PARQUET;", tmp.path().display()));
    let other = cluster_certs(&tmp.path().join("other"));
    let other_ca = other.join("ca.pem").display().to_string();
    for (extra, says) in [
        (vec![], "speaks TLS only: give --tls-ca"),
        (vec!["--tls-ca", other_ca.as_str()], "TLS with the scheduler at 127.0.0.1"),
    ] {
        let mut args = vec!["run", "--cluster", &url, recipe.to_str().unwrap(), "--quiet", "--wait-for-executors", "5", "--secret-file", &secret_arg];
        args.extend(extra);
        let err = tokq_err_within(&args, 60);
        assert!(err.contains(says), "{err}");
    }
    assert!(!tmp.path().join("never").exists());

    // The ports answer nothing in clear text: not the scheduler's HTTP, not the executors'
    // Flight; over TLS a member reaches the Flight service.
    assert_eq!(http_get(cluster.port, "/tokq/executors", cluster.agent.as_deref()).0, 0);
    for port in cluster.flight_ports.clone() {
        assert_eq!(http_get(port, "/", None).0, 0);
        let plain = flight_call(port, &cluster.member, false);
        assert!(plain.is_err(), "executor Flight port {port} answered in clear text: {plain:?}");
        let tls = flight_call(port, &cluster.member, true);
        assert!(tls.is_ok(), "executor Flight port {port} refused a member over TLS: {tls:?}");
    }

    // An executor without TLS cannot join: it exits with one line instead of polling for ever.
    let last = executor_refused(&cluster, &["--secret-file", &secret_arg]);
    let port = cluster.port;
    assert!(last.contains(&format!("the scheduler at 127.0.0.1:{port} refused this executor: the scheduler at 127.0.0.1:{port} speaks TLS only")), "{last}");

    // A node given part of its TLS is told which part is missing.
    let key = certs.join("127.0.0.1.key").display().to_string();
    let err = tokq_err_within(&["scheduler", "--bind-port", "1", "--tls-ca", &ca, "--tls-key", &key], 30);
    assert!(err.contains("needs --tls-ca, --tls-cert and --tls-key") && err.contains("--tls-cert missing"), "{err}");
}
