//! A light S3 server for `benches/bench_s3.py --server s3s`: s3s-fs 0.14.1 (a Rust S3 server over
//! a directory, crates.io) with two changes. (1) Its GET streams the object from a `tokio::fs::File`
//! 4 KiB at a time, each read a hand-off to tokio's blocking pool and back: ~0.54 CPU-s to serve
//! a bench read of 74 MB, 4x moto's. Here the bytes a GET answers (the whole object or its range)
//! are read in one blocking call and sent as one body; everything else, the GET's headers
//! (ETag, Content-Range, ...) and its errors included, is s3s-fs's own. (2) Accepted sockets
//! are TCP_NODELAY, as most HTTP servers set them (s3s-fs's `main` does not).
//!
//!     paimon-bench-s3s [--host H] [--port P] [--access-key A --secret-key S] ROOT

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use s3s::auth::SimpleAuth;
use s3s::dto::*;
use s3s::service::S3ServiceBuilder;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result, S3};
use s3s_fs::FileSystem;

struct Server {
    fs: FileSystem,
    root: PathBuf,
}

fn internal(e: impl std::fmt::Display) -> S3Error {
    S3Error::with_message(S3ErrorCode::InternalError, e.to_string())
}

/// `len` bytes of `path` from `start`, in one read.
fn read_range(path: &Path, start: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let mut f = std::fs::File::open(path)?;
    f.seek(SeekFrom::Start(start))?;
    let mut buf = vec![0u8; len];
    f.read_exact(&mut buf)?;
    Ok(buf)
}

#[async_trait::async_trait]
impl S3 for Server {
    async fn get_object(
        &self,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        // s3s-fs checks the names (no escape from the root) and the range, and fails first
        let path = self.root.join(&req.input.bucket).join(&req.input.key);
        let range = req.input.range;
        let mut resp = self.fs.get_object(req).await?;
        let len = resp.output.content_length.unwrap_or(0);
        let start = match range {
            None => 0,
            Some(r) => {
                let size = std::fs::metadata(&path).map_err(internal)?.len();
                r.check(size).map_err(internal)?.start
            }
        };
        let len = usize::try_from(len).map_err(internal)?;
        let bytes = tokio::task::spawn_blocking(move || read_range(&path, start, len))
            .await
            .map_err(internal)?
            .map_err(internal)?;
        resp.output.body = Some(StreamingBlob::from(s3s::Body::from(bytes::Bytes::from(
            bytes,
        ))));
        Ok(resp)
    }

    async fn create_bucket(
        &self,
        req: S3Request<CreateBucketInput>,
    ) -> S3Result<S3Response<CreateBucketOutput>> {
        self.fs.create_bucket(req).await
    }
    async fn head_bucket(
        &self,
        req: S3Request<HeadBucketInput>,
    ) -> S3Result<S3Response<HeadBucketOutput>> {
        self.fs.head_bucket(req).await
    }
    async fn list_buckets(
        &self,
        req: S3Request<ListBucketsInput>,
    ) -> S3Result<S3Response<ListBucketsOutput>> {
        self.fs.list_buckets(req).await
    }
    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        self.fs.head_object(req).await
    }
    async fn list_objects(
        &self,
        req: S3Request<ListObjectsInput>,
    ) -> S3Result<S3Response<ListObjectsOutput>> {
        self.fs.list_objects(req).await
    }
    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        self.fs.list_objects_v2(req).await
    }
    async fn put_object(
        &self,
        req: S3Request<PutObjectInput>,
    ) -> S3Result<S3Response<PutObjectOutput>> {
        self.fs.put_object(req).await
    }
    async fn copy_object(
        &self,
        req: S3Request<CopyObjectInput>,
    ) -> S3Result<S3Response<CopyObjectOutput>> {
        self.fs.copy_object(req).await
    }
    async fn delete_object(
        &self,
        req: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        self.fs.delete_object(req).await
    }
    async fn delete_objects(
        &self,
        req: S3Request<DeleteObjectsInput>,
    ) -> S3Result<S3Response<DeleteObjectsOutput>> {
        self.fs.delete_objects(req).await
    }
    async fn create_multipart_upload(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        self.fs.create_multipart_upload(req).await
    }
    async fn upload_part(
        &self,
        req: S3Request<UploadPartInput>,
    ) -> S3Result<S3Response<UploadPartOutput>> {
        self.fs.upload_part(req).await
    }
    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        self.fs.complete_multipart_upload(req).await
    }
    async fn abort_multipart_upload(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        self.fs.abort_multipart_upload(req).await
    }
    async fn list_parts(
        &self,
        req: S3Request<ListPartsInput>,
    ) -> S3Result<S3Response<ListPartsOutput>> {
        self.fs.list_parts(req).await
    }
}

fn usage(msg: &str) -> ! {
    eprintln!(
        "{msg}\nusage: paimon-bench-s3s [--host H] [--port P] [--access-key A --secret-key S] ROOT"
    );
    std::process::exit(2)
}

#[tokio::main]
async fn main() {
    let (mut host, mut port) = ("127.0.0.1".to_string(), 8014u16);
    let (mut ak, mut sk, mut root) = (None, None, None);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| usage(&format!("{a}: no value")))
        };
        match a.as_str() {
            "--host" => host = value(),
            "--port" => {
                port = value()
                    .parse()
                    .unwrap_or_else(|_| usage("--port: a number"))
            }
            "--access-key" => ak = Some(value()),
            "--secret-key" => sk = Some(value()),
            _ if root.is_none() && !a.starts_with("--") => root = Some(PathBuf::from(a)),
            _ => usage(&format!("unknown argument {a}")),
        }
    }
    let root = root.unwrap_or_else(|| usage("no ROOT directory"));
    let fs =
        FileSystem::new(&root).unwrap_or_else(|e| usage(&format!("{}: {e:?}", root.display())));
    let root = root
        .canonicalize()
        .unwrap_or_else(|e| usage(&e.to_string()));
    let mut b = S3ServiceBuilder::new(Server { fs, root });
    match (ak, sk) {
        (Some(ak), Some(sk)) => b.set_auth(SimpleAuth::from_single(ak, sk)),
        (None, None) => {}
        _ => usage("--access-key and --secret-key go together"),
    }
    let service = b.build();
    let listener = tokio::net::TcpListener::bind((host.as_str(), port))
        .await
        .unwrap_or_else(|e| usage(&format!("{host}:{port}: {e}")));
    let http = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            continue;
        };
        // responses go out as written (no Nagle delay on a request's last segment)
        let _ = socket.set_nodelay(true);
        let conn = http
            .serve_connection(hyper_util::rt::TokioIo::new(socket), service.clone())
            .into_owned();
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
}
