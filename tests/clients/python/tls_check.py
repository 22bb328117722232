"""TLS check of idmint with stock Python clients: redis-py over rediss:// and urllib over https://.

Usage: tls_check.py REDISS_URL HTTPS_URL CA_FILE TOKEN

Prints `OK check` or `FAIL check why` per check; the Rust harness
(crates/idmint/tests/integration/security.rs) reads them. The CA file is the only trust anchor:
the server's certificate must chain to it and name 127.0.0.1.
"""

import json
import ssl
import sys
import urllib.request

import redis


def main() -> None:
    rediss_url, https_url, ca_file, token = sys.argv[1:5]

    try:
        client = redis.Redis.from_url(
            rediss_url, password=token, ssl_ca_certs=ca_file, socket_timeout=10
        )
        first = client.incr("tls-orders")
        second = client.incr("tls-orders")
        print("OK rediss incr" if second == first + 1 else f"FAIL rediss incr {first} {second}")
        snowflake = client.execute_command("IDMINT.SNOWFLAKE")
        print("OK rediss snowflake" if int(snowflake) > 0 else "FAIL rediss snowflake")
        client.close()
    except Exception as error:  # any failure is a finding, printed for the harness
        print(f"FAIL rediss {type(error).__name__}: {error}")

    context = ssl.create_default_context(cafile=ca_file)
    for check, path in [("snowflake", "/v1/snowflake?count=2"), ("segment", "/v1/segment/tls-web")]:
        try:
            request = urllib.request.Request(
                https_url + path, headers={"Authorization": f"Bearer {token}"}
            )
            with urllib.request.urlopen(request, context=context, timeout=10) as response:
                ids = json.load(response)["ids"]
            print(f"OK https {check}" if ids else f"FAIL https {check} no ids")
        except Exception as error:
            print(f"FAIL https {check} {type(error).__name__}: {error}")


main()
