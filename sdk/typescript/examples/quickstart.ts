import { Continuum } from "@continuum/client";

const memory = new Continuum({ baseUrl: process.env.CONTINUUM_URL ?? "http://127.0.0.1:8000",
                               token: process.env.CONTINUUM_TOKEN! });
await memory.events.send({ kind: "turn", session_id: "web-42", channel: "web", user_id: "jason",
                           role: "user", content: "Let's go with Hoffmann for the garden." });
await memory.memories.store({ memory_type: "fact", key: "garden_contractor",
                              value: "Hoffmann does the garden." }, { user_id: "jason" });
const { items } = await memory.search.list({ q: "garden", user_id: "jason", limit: 5 });
for (const hit of items) console.log(hit.kind, hit.content);
for await (const task of memory.tasks.iterate({ user_id: "jason" })) console.log(task.title);
console.log((await memory.context({ user_id: "jason", seed_text: "Who does the garden?" })).block);
