# WebSocket mode: connect, then paste one response.create per line;
# the events come back one per frame (Ctrl+C to close)
websocat -H 'Authorization: Bearer sk-local' ws://127.0.0.1:8080/v1/responses
{"type": "response.create", "model": "spark", "input": "Hello", "store": false}
