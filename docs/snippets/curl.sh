# HTTP + SSE: the events arrive as they happen (-N: no buffering)
curl -sN http://127.0.0.1:8080/v1/responses \
  -H 'Content-Type: application/json' -H 'Authorization: Bearer sk-local' \
  -d '{"model": "spark", "input": "Hello", "stream": true}'
