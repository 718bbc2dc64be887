"""The service's judge cache: the S3 store, and where `FAIR_FORGE_JUDGE_CACHE` points.

`FAIR_FORGE_JUDGE_CACHE` is `s3://<bucket>/<prefix>` on AWS (template.yaml's cache bucket,
whose lifecycle rule expires entries) or a directory (the local API). A request uses it
only when it says `config.judge_cache: true` (`handler.connectors.plan_for_request`); saying
so when no cache is configured is not an error, but a warning in the response
(`NO_CACHE_WARNING`).

boto3 is imported when the S3 store is first used (`handler.job_store.client`), not at a
cold start; the core's `fair_forge_core.judges.cache` knows nothing of AWS.
"""

from __future__ import annotations

from fair_forge_core.judges.cache import CacheError, DirectoryCache, JudgeCache, check_key

NO_CACHE_WARNING = (
    "config.judge_cache is true but this service has no judge cache (FAIR_FORGE_JUDGE_CACHE): every turn was judged"
)


class S3JudgeCache:
    """Entries as objects `<prefix><key>.json` of `bucket`. A put is atomic in S3 (a reader
    sees the whole old object, the whole new one, or none); a missing object is a miss."""

    def __init__(self, bucket: str, prefix: str = "") -> None:
        self.bucket = bucket
        self.prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"

    def object_key(self, key: str) -> str:
        return f"{self.prefix}{check_key(key)}.json"

    def get(self, key: str) -> bytes | None:
        from botocore.exceptions import BotoCoreError, ClientError

        from handler.job_store import client

        try:
            response = client("s3").get_object(Bucket=self.bucket, Key=self.object_key(key))
            return bytes(response["Body"].read())
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in ("NoSuchKey", "404", "NotFound"):
                return None
            raise CacheError(f"S3 GetObject failed: {code or type(exc).__name__}") from None
        except BotoCoreError as exc:
            raise CacheError(f"S3 GetObject failed: {type(exc).__name__}") from None

    def put(self, key: str, entry: bytes) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        from handler.job_store import client

        try:
            client("s3").put_object(
                Bucket=self.bucket, Key=self.object_key(key), Body=entry, ContentType="application/json"
            )
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            raise CacheError(f"S3 PutObject failed: {code or type(exc).__name__}") from None
        except BotoCoreError as exc:
            raise CacheError(f"S3 PutObject failed: {type(exc).__name__}") from None

    def describe(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"


def open_cache(location: str) -> JudgeCache:
    """The store of `FAIR_FORGE_JUDGE_CACHE`: S3 for `s3://bucket/prefix`, else a directory."""
    if location.startswith("s3://"):
        bucket, _, prefix = location.removeprefix("s3://").partition("/")
        return S3JudgeCache(bucket, prefix)
    return DirectoryCache(location)
