from openai import OpenAI

# websocket_base_url: WebSocket mode would otherwise derive wss:// from base_url
client = OpenAI(base_url="http://127.0.0.1:8080/v1", api_key="sk-local",
                websocket_base_url="ws://127.0.0.1:8080/v1")

# HTTP + SSE
for event in client.responses.create(model="spark", input="Hello", stream=True):
    print(event.sequence_number, event.type)

# WebSocket mode: pip install "openai[realtime]>=3.8.0"
with client.responses.connect() as conn:
    conn.response.create(model="spark", input="Hello", store=False)
    for event in conn:
        print(event.type)
        if event.type in ("response.completed", "response.failed", "response.incomplete", "error"):
            break
