"""A deterministic synthetic long conversation: months of sessions between one user and an
assistant, with names, dates, paraphrased questions, multi-hop facts spread over sessions,
updated facts, assistant-side answers and time-anchored events among filler small talk.

Each question lists the message ids of its evidence turns and the `now` it is asked at.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

START = datetime(2026, 3, 2, 18, tzinfo=UTC)  # a Monday
SESSIONS = 72
NAMES = ["Priya", "Tomasz", "Aiko", "Lucas", "Fatima", "Oren", "Greta", "Kwame", "Ines", "Rafael"]
CITIES = ["Lisbon", "Montreal", "Osaka", "Nairobi", "Tallinn", "Porto", "Denver", "Hanoi"]
PETS = ["Biscuit", "Pepper", "Mochi", "Juniper", "Waffles", "Ziggy"]
PLACES = ["the climbing gym", "the farmers market", "the lake trail", "the jazz bar"]
PEOPLE = [
    (5, "My colleague {n} is obsessed with birdwatching, binoculars on the desk.",
     "Which coworker is into watching birds?"),
    (17, "{n} from the office runs marathons, three this year already.",
     "Who at work does long-distance running?"),
    (22, "My neighbour {n} plays the cello in a community orchestra.",
     "Which neighbour is a musician?"),
    (36, "My dentist appointment is with Dr. {n} on the third floor.",
     "Who is the dentist I see?"),
    (41, "{n} lent me a tent and sleeping bags for the camping trip.",
     "Who did I borrow camping gear from?"),
    (63, "My landlord {n} is raising the rent by five percent in October.",
     "How much is the rent going up?"),
]  # fmt: skip
FILLER = [
    ("user", "Morning! The weather is grey again, I might just stay in and read."),
    ("assistant", "Sounds cosy. Anything on your reading list right now?"),
    ("user", "Work was hectic today, three meetings back to back and a deadline moved up."),
    ("assistant", "That is a lot. Do you want to plan tomorrow so it feels lighter?"),
    ("user", "I cooked a big pot of lentil soup, enough for the whole week."),
    ("assistant", "Batch cooking is a great habit. Did you add anything new to it?"),
    ("user", "My friend sent me photos from their trip, the city looked beautiful."),
    ("assistant", "Travel photos are the best kind of mail. Are you planning a trip too?"),
    ("user", "Can you remind me what we talked about regarding sleep routines?"),
    ("assistant", "We said screens off by ten and a short walk after dinner."),
    ("user", "I went for a run by the river, my knee felt fine this time."),
    ("assistant", "Glad the knee held up. Keep the warm-up, it seems to help."),
    ("user", "The neighbours are renovating, drilling started at seven again."),
    ("assistant", "Ugh. Maybe earplugs or working from the café for a few days?"),
]


@dataclass
class Question:
    text: str
    evidence: list[str]
    now: datetime
    kind: str


@dataclass
class LongConversation:
    namespace: str
    events: list[dict[str, Any]] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


class _Builder:
    def __init__(self, namespace: str, seed: int) -> None:
        self.rng = random.Random(seed)
        self.conv = LongConversation(namespace)
        self.sessions: list[list[tuple[str, str]]] = [[] for _ in range(SESSIONS)]
        self.planted: dict[tuple[int, int], str] = {}  # (session, index) → label

    def when(self, session: int) -> datetime:
        return START + timedelta(days=session * 2.5)

    def plant(self, session: int, role: str, text: str, label: str) -> str:
        self.sessions[session].append((role, text))
        self.planted[(session, len(self.sessions[session]) - 1)] = label
        return label

    def ask(self, text: str, labels: list[str], kind: str, now: datetime | None = None) -> None:
        self.conv.questions.append(Question(text, labels, now or self.when(SESSIONS), kind))

    def build(self) -> LongConversation:
        for s, turns in enumerate(self.sessions):
            filler = self.rng.sample(range(0, len(FILLER), 2), 4)
            lines = [line for i in filler for line in FILLER[i : i + 2]]
            for planted in turns:
                lines.insert(self.rng.randrange(len(lines) + 1), planted)
            labels = {}
            for i, line in enumerate(lines):
                for (ps, pi), label in self.planted.items():
                    if ps == s and self.sessions[s][pi] is line:
                        labels[label] = f"lc{s:03d}-{i:02d}"
            for i, (role, content) in enumerate(lines):
                self.conv.events.append(
                    {
                        "kind": "turn",
                        "namespace": self.conv.namespace,
                        "session_id": f"lc{s:03d}",
                        "channel": ("voice", "discord", "telegram")[s % 3],
                        "user_id": "maya",
                        "ts": (self.when(s) + timedelta(minutes=i)).isoformat(),
                        "role": role,
                        "content": content,
                        "message_id": f"lc{s:03d}-{i:02d}",
                    }
                )
            for question in self.conv.questions:
                question.evidence = [labels.get(x, x) for x in question.evidence]
        return self.conv


def generate(namespace: str = "longconv", seed: int = 7) -> LongConversation:
    """The conversation and its questions; the same seed always gives the same data."""
    b = _Builder(namespace, seed)
    rng = b.rng
    names, cities, pets = rng.sample(NAMES, 8), rng.sample(CITIES, 6), rng.sample(PETS, 4)
    # single hop, paraphrased
    b.plant(
        3, "user", f"Big news: my sister {names[0]} just moved to {cities[0]} for a new job.", "a"
    )
    b.ask("Where did my sister relocate to?", ["a"], "paraphrase")
    b.plant(9, "user", f"My manager {names[1]} approved my request to work four days a week.", "b")
    b.ask("Who signed off on my shorter work week?", ["b"], "paraphrase")
    b.plant(15, "user", "I found out I'm allergic to cashews, the doctor confirmed it.", "c")
    b.ask("Which nut does my body react badly to?", ["c"], "paraphrase")
    # multi hop over sessions
    b.plant(6, "user", f"My best friend is {names[2]}, we met at university.", "d1")
    b.plant(31, "user", f"{names[2]} adopted a beagle puppy and named it {pets[0]}.", "d2")
    b.ask("What is my best friend's dog called?", ["d1", "d2"], "multi-hop")
    b.plant(12, "user", f"My cousin {names[3]} is getting married this summer.", "e1")
    b.plant(44, "user", f"The wedding of {names[3]} will be held in {cities[1]}.", "e2")
    b.ask("In which city is my cousin's wedding taking place?", ["e1", "e2"], "multi-hop")
    # updated facts: the newer turn is the answer
    b.plant(8, "user", "I started learning the guitar, twenty minutes every evening.", "f0")
    b.plant(50, "user", "I gave up the guitar and switched to piano lessons instead.", "f")
    b.ask("Which instrument am I practicing these days?", ["f"], "update")
    b.plant(20, "user", f"We're planning the holiday in {cities[2]}.", "g0")
    b.plant(58, "user", f"Change of plans, the holiday is now going to be in {cities[3]}.", "g")
    b.ask("Where are we going on holiday in the end?", ["g"], "update")
    # answers given by the assistant
    b.plant(24, "user", "Can you recommend a book about habit building?", "h0")
    b.plant(24, "assistant", "Try Atomic Habits by James Clear, it is short and practical.", "h")
    b.ask("What book did you suggest for forming habits?", ["h"], "assistant")
    b.plant(38, "assistant", "For the sore shoulder, alternate ice and heat for two days.", "i")
    b.ask("What did you tell me to do about my shoulder?", ["i"], "assistant")
    # time-anchored: the same activity on several days, with different friends
    for k, session in enumerate((52, 56, 60, 64, 68)):
        friend, place, day = names[4 + k % 4], PLACES[k % 2], b.when(session)
        b.plant(session, "user", f"Spent the afternoon at {place} with {friend}.", f"t{k}")
        b.ask(f"Who was I at {place} with last {day:%A}?", [f"t{k}"], "temporal",
              now=day + timedelta(days=3))  # fmt: skip
    # reported after the fact: said on a Monday about the weekend before, asked next day
    for k, session in enumerate((28, 42)):  # sessions on Mondays
        friend = names[4 + k]
        b.plant(session, "user", f"Last weekend I went sailing with {friend}, no wind at all.",
                f"r{k}")  # fmt: skip
        b.ask("Who did I go sailing with last weekend?", [f"r{k}"], "temporal",
              now=b.when(session) + timedelta(days=1))  # fmt: skip
    b.plant(33, "user", "Today I finally submitted the grant application.", "j")
    b.ask(f"What did I submit in {b.when(33):%B}?", ["j"], "temporal")
    # people around the user, asked about without their names
    for k, (session, fact, question) in enumerate(PEOPLE):
        b.plant(session, "user", fact.format(n=rng.choice(NAMES)), f"p{k}")
        b.ask(question, [f"p{k}"], "paraphrase")
    # names and rare keywords
    b.plant(47, "user", f"The plumber, {names[7]}, fixed the leak for 180 euros.", "k")
    b.ask(f"How much did {names[7]} charge?", ["k"], "keyword")
    b.plant(27, "user", "My new phone number ends in 4471, I changed carriers.", "l")
    b.ask("Why did my phone number change?", ["l"], "paraphrase")
    return b.build()
