# ruff: noqa: RUF001 (CJK punctuation on purpose)
"""A labelled set for memory search: facts, distractors, and questions that
name their fact either by paraphrase (no content word shared with it) or by
an exact rare term (a name, a number, a code). English, with French,
Spanish, German and Japanese."""

# fact id -> text
FACTS = {
    "dog": "I adopted a golden retriever puppy last spring.",
    "allergy": "Eating peanuts makes my throat swell up, so I avoid them.",
    "job": "I work as a nurse in the intensive care unit.",
    "sister": "My younger sibling Clara lives in Toronto.",
    "car": "I drive an old blue Volvo station wagon.",
    "vegetarian": "I stopped eating meat and fish three years ago.",
    "guitar": "I have been practising the guitar every evening.",
    "wedding": "We got married on a beach in Crete in 2019.",
    "flight": "My flight to Lisbon leaves on Tuesday at 7 am.",
    "order": "The replacement laptop was ordered under number KX-48213.",
    "coffee": "Every morning I drink two cups of espresso.",
    "sleep": "I usually go to bed around midnight and wake at seven.",
    "fr_cat": "Mon chat s'appelle Pistache et il adore dormir au soleil.",
    "es_house": "Vivimos en un piso pequeño cerca del puerto de Valencia.",
    "de_bike": "Ich fahre jeden Tag mit dem Fahrrad zur Arbeit.",
    "ja_tea": "私は毎朝緑茶を飲みます。",
}

DISTRACTORS = [
    "The weather was nice today, I think.",
    "I watched a documentary about volcanoes last night.",
    "Can you remind me to call the bank tomorrow?",
    "The printer at the office is broken again.",
    "I read an article about electric scooters.",
    "Our team meeting moved to Thursday afternoon.",
    "The neighbours are painting their fence green.",
    "I need to buy new running shoes soon.",
    "The museum was closed for renovation.",
    "I lost my umbrella on the bus.",
    "Le train était en retard ce matin.",
    "Mañana tengo una reunión importante.",
]

# (question, fact id); a paraphrase shares no content word with its fact.
PARAPHRASES = [
    ("What kind of dog does the user own?", "dog"),
    ("Which food is the user allergic to?", "allergy"),
    ("What is the user's profession?", "job"),
    ("Where does the user's sister live?", "sister"),
    ("What car does the user have?", "car"),
    ("Is the user a vegetarian?", "vegetarian"),
    ("Which musical instrument is the user learning?", "guitar"),
    ("Where was the user's wedding?", "wedding"),
    ("How much coffee does the user have a day?", "coffee"),
    ("When does the user go to sleep?", "sleep"),
    ("Comment s'appelle le chat de l'utilisateur ?", "fr_cat"),
    ("¿En qué ciudad vive el usuario?", "es_house"),
    ("Wie kommt der Nutzer zur Arbeit?", "de_bike"),
    ("ユーザーは朝に何を飲みますか？", "ja_tea"),
]

# (question, fact id): a rare term of the fact, as written.
EXACT_TERMS = [
    ("Lisbon", "flight"),
    ("KX-48213", "order"),
    ("Clara", "sister"),
    ("Pistache", "fr_cat"),
    ("Volvo", "car"),
    ("Crete", "wedding"),
]
