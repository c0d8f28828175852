//! Listing a member: raw paginated `GET`s of nodes and pods, following `continue` tokens; a
//! 410 Gone on a continue token restarts that list (up to [`MAX_RESTARTS`] times).

use super::*;

pub(super) async fn list_cluster(client: &kube::Client, page_size: u32) -> Result<(Fold, u32), PollError> {
    let mut fold = Fold::default();
    let (node_pages, _) = list_all::<NodeItem, _>(client, "/api/v1/nodes", "nodes", page_size, &mut fold).await?;
    let (pod_pages, _) = list_all::<PodItem, _>(client, "/api/v1/pods", "pods", page_size, &mut fold).await?;
    Ok((fold, node_pages + pod_pages))
}

/// The same lists as [`list_cluster`], into a [`WatchCache`], with the resource versions the
/// watches start from.
pub(super) async fn list_to_cache(client: &kube::Client, page_size: u32) -> Result<(Start, u32), PollError> {
    let mut cache = WatchCache::default();
    let (node_pages, nodes_rv) =
        list_all::<NodeItem, _>(client, "/api/v1/nodes", "nodes", page_size, &mut cache.nodes).await?;
    let (pod_pages, pods_rv) =
        list_all::<PodItem, _>(client, "/api/v1/pods", "pods", page_size, &mut cache.pods).await?;
    Ok((Start { cache, nodes_rv, pods_rv }, node_pages + pod_pages))
}

/// Lists every page of `path` into `sink`; returns the pages and the resource version of the
/// first page (a watch from there replays whatever changed while the pages were fetched).
pub(super) async fn list_all<T: serde::de::DeserializeOwned, S: Sink<T>>(
    client: &kube::Client,
    path: &str,
    what: &'static str,
    page_size: u32,
    sink: &mut S,
) -> Result<(u32, String), PollError> {
    let mut token: Option<String> = None;
    let mut restarts = 0;
    let mut pages = 0;
    let mut rv = String::new();
    loop {
        let mut url = format!("{path}?limit={page_size}");
        if let Some(t) = &token {
            url.push_str("&continue=");
            url.push_str(&crate::util::percent::encode(t));
        }
        match get(client, &url, what).await {
            Ok(bytes) => {
                let page = decode_page::<T>(&bytes).map_err(|e| PollError::Decode { what, message: e.to_string() })?;
                if token.is_none() {
                    rv = page.metadata.resource_version.clone().unwrap_or_default();
                }
                pages += 1;
                sink.add(page.items);
                match page.metadata.next() {
                    Some(t) => token = Some(t.to_string()),
                    None => return Ok((pages, rv)),
                }
            }
            Err(Got::Gone(message)) if token.is_some() => {
                restarts += 1;
                if restarts > MAX_RESTARTS {
                    return Err(PollError::Gone { what, restarts: restarts - 1 });
                }
                tracing::debug!(what, %message, restarts, "continue token expired; restarting the list");
                token = None;
                sink.reset();
            }
            Err(Got::Gone(message)) => return Err(PollError::Http { status: 410, what, message }),
            Err(Got::Failed(e)) => return Err(e),
        }
    }
}

/// A request that could not be sent: the credentials' error (an access error) when they
/// refused it, else a transport error.
pub(super) fn send_error(e: &kube::Error, what: &'static str, context: &str) -> Got {
    match credential_error(e) {
        Some(c) => Got::Failed(c.clone().into()),
        None => Got::Failed(PollError::Transport { what, message: format!("{context}{}", chain(e)) }),
    }
}

pub(super) async fn get(client: &kube::Client, url: &str, what: &'static str) -> Result<Vec<u8>, Got> {
    get_limited(client, url, what, "application/json", MAX_PAGE_BYTES).await
}

/// A `GET` of `url` with `Accept: accept` whose body may hold at most `limit` bytes.
pub(super) async fn get_limited(
    client: &kube::Client,
    url: &str,
    what: &'static str,
    accept: &'static str,
    limit: usize,
) -> Result<Vec<u8>, Got> {
    let req = http::Request::get(url)
        .header(http::header::ACCEPT, accept)
        .body(kube::client::Body::from(Vec::new()))
        .map_err(|e| Got::Failed(PollError::Transport { what, message: e.to_string() }))?;
    let res = client.send(req).await.map_err(|e| send_error(&e, what, ""))?;
    let status = res.status();
    let body = http_body_util::Limited::new(res.into_body(), limit)
        .collect()
        .await
        .map_err(|e| Got::Failed(PollError::Transport { what, message: format!("reading the body: {}", chain(&*e)) }))?
        .to_bytes();
    if status.is_success() {
        return Ok(body.to_vec());
    }
    Err(http_error(status.as_u16(), status_message(&body), what))
}
