# ruff: noqa: RUF001 (CJK punctuation and full-width marks on purpose)
"""The labelled evaluation set of memory search, in two parts with memories
of their own: `TUNING`, which the relevance test and the ranking were
shaped on, and `HELD_OUT`, written with it but never used to choose a
constant (docs/performance.md, "Memory relevance and recall", says how it
is kept out).

Each part holds memories (facts, and distractors, some sharing words with
a question but not its meaning) in Latin, CJK, Hangul, Cyrillic, Arabic
and Devanagari scripts, and questions of three kinds:
- paraphrases: they name their fact in other words (the held-out part's share
  no content word with it; some of the tuning part's, older, share one);
- exact terms: a rare term of the fact, as written (a name, a number);
- unrelated: questions about nothing in the part, at least two per script,
  whose every keyword term is absent from the part's memories (checked by
  the tests), so that anything found for them is found by meaning.
Read by tests/test_memory_relevance.py and bench/memory_relevance.py.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class EvaluationPart:
    name: str
    # memory id -> text
    memories: dict[str, str]
    # (question, the id of the memory that answers it)
    paraphrases: tuple[tuple[str, str], ...]
    exact_terms: tuple[tuple[str, str], ...]
    # (question, its script)
    unrelated: tuple[tuple[str, str], ...]

    @property
    def scripts(self) -> set[str]:
        return {script for _, script in self.unrelated}


TUNING = EvaluationPart(
    name="tuning",
    memories={
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
        "ja_name": "私の名前は太郎です。",
        "zh_ml": "我喜欢机器学习，特别是深度学习。",
        "ko_city": "김민수는 서울에 살아요.",
        "ru_name": "Меня зовут Иван, я из Новосибирска.",
        "ar_coffee": "أشرب القهوة كل صباح مع أمي.",
        "hi_yoga": "मैं रोज़ सुबह योग करता हूँ।",
        # distractors
        "documentary": "I watched a documentary about volcanoes last night.",
        "bank": "Can you remind me to call the bank tomorrow?",
        "printer": "The printer at the office is broken again.",
        "scooters": "I read an article about electric scooters.",
        "meeting": "Our team meeting moved to Thursday afternoon.",
        "fence": "The neighbours are painting their fence green.",
        "shoes": "I need to buy new running shoes soon.",
        "umbrella": "I lost my umbrella on the bus.",
        "fr_train": "Le train était en retard ce matin.",
        "es_meeting": "Mañana tengo una reunión importante.",
        # distractors that share a word with a question, not its meaning
        "dog_eared": "A dog-eared paperback was left on the train.",
        "kind_own": "Be kind to yourself when you own a mistake.",
        "food_trucks": "Food trucks line the street on Fridays.",
        "sleep_mode": "The sleep mode on my laptop is broken.",
        "car_parks": "Car parks in the city centre are expensive.",
        "ja_movie": "昨日は友達と映画を見ました。",
        "zh_meeting": "今天的会议推迟到下午三点。",
        "ru_shop": "Магазин закрывается в девять вечера.",
    },
    paraphrases=(
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
        ("用户对什么技术感兴趣？", "zh_ml"),
        ("Откуда родом пользователь?", "ru_name"),
    ),
    exact_terms=(
        ("Lisbon", "flight"),
        ("KX-48213", "order"),
        ("Clara", "sister"),
        ("Pistache", "fr_cat"),
        ("Volvo", "car"),
        ("Crete", "wedding"),
        ("太郎", "ja_name"),
        ("김민수는", "ko_city"),
        ("Новосибирска", "ru_name"),
        ("القهوة", "ar_coffee"),
        ("योग", "hi_yoga"),
    ),
    unrelated=(
        ("Who composed the Moonlight Sonata?", "Latin"),
        ("What is photosynthesis?", "Latin"),
        ("Quelle est la hauteur du mont Blanc ?", "Latin"),
        ("天気", "CJK"),
        ("天气预报", "CJK"),
        ("宇宙の大きさ", "CJK"),
        ("Погода", "Cyrillic"),
        ("Сколько лет Солнцу?", "Cyrillic"),
        ("날씨", "Hangul"),
        ("지구의 나이는?", "Hangul"),
        ("ما هو الطقس اليوم؟", "Arabic"),
        ("كم عمر الشمس؟", "Arabic"),
        ("आज मौसम कैसा है?", "Devanagari"),
        ("सूरज कितना पुराना है?", "Devanagari"),
    ),
)


HELD_OUT = EvaluationPart(
    name="held-out",
    memories={
        "pet": "Our family has a grey tabby kitten named Biscuit.",
        "lactose": "I can't digest lactose, so I skip cheese and milk.",
        "teacher": "I teach mathematics at a secondary school.",
        "brother": "My older brother Tomasz moved to Melbourne last year.",
        "bicycle": "I commute on a red road bicycle with drop handlebars.",
        "watercolour": "On weekends I paint watercolour landscapes.",
        "phone": "My mobile number changed to 0176 5521 9034.",
        "birthday": "I was born on the 3rd of November.",
        "flat": "We rent a flat on the fourth floor with no elevator.",
        "swimming": "I swim forty lengths at the pool every Monday.",
        "patagonia": "Next month I'm going hiking in Patagonia.",
        "novel": "I'm reading a novel by Haruki Murakami right now.",
        "thyroid": "I take a thyroid pill every morning before breakfast.",
        "portuguese": "I've been studying Portuguese on an app for six months.",
        "band": "My favourite band is Radiohead.",
        "balcony": "I grow strawberries and courgettes on my balcony.",
        "fr_school": "Ma fille commence l'école primaire en septembre.",
        "es_paella": "Mi abuela cocina paella todos los domingos.",
        "de_dentist": "Ich habe nächste Woche einen Termin beim Zahnarzt.",
        "ja_mountain": "週末はよく山に登ります。",
        "zh_running": "我每天早上跑步五公里。",
        "ko_allergy": "저는 고양이 알레르기가 있어요.",
        "ru_programmer": "Я работаю программистом в банке.",
        "motorbike": "I sold my motorbike and now take the tram.",
        "ar_market": "ذهبت إلى السوق واشتريت خبزاً طازجاً.",
        "hi_tea": "मैं हर शाम अदरक वाली चाय पीता हूँ।",
        # distractors
        "library": "I need to renew my library card.",
        "zh_office": "今天的会议推迟到下午三点。",
        "ja_cinema": "昨日は友達と映画を見ました。",
        "ko_friend": "내일 친구를 만나기로 했어요.",
        "ru_bus": "Автобус опоздал на двадцать минут.",
        # distractors that share a word with a question, not its meaning
        "pet_peeve": "My pet peeve is people who are always late.",
        "living_room": "The living room lights need new bulbs.",
        "currents": "The currents at the beach were strong.",
        "city_council": "The city council voted on parking fees.",
        "fire_drill": "The fire drill exercise is scheduled for Friday.",
        "summit": "We reached the summit just before sunset.",
        "fruit_bowl": "The fruit bowl on the kitchen table is empty.",
    },
    paraphrases=(
        ("Which pet does the user have?", "pet"),
        ("Does the user have any food intolerance?", "lactose"),
        ("What does the user do for a living?", "teacher"),
        ("In which city does the user's sibling reside?", "brother"),
        ("How does the user get to the office?", "bicycle"),
        ("What artistic pastime does the user enjoy?", "watercolour"),
        ("How can the user be reached by telephone?", "phone"),
        ("When does the user celebrate their birthday?", "birthday"),
        ("Does the user live in a house or an apartment?", "flat"),
        ("What exercise does the user do weekly?", "swimming"),
        ("Where is the user's upcoming trip?", "patagonia"),
        ("Which author's fiction is the user currently enjoying?", "novel"),
        ("Is the user on any medicine?", "thyroid"),
        ("Which foreign tongue is the user learning?", "portuguese"),
        ("What group does the user like to listen to?", "band"),
        ("What fruit and vegetables does the user cultivate?", "balcony"),
        ("Quand est-ce que son enfant fait sa rentrée ?", "fr_school"),
        ("¿Qué comida hace su familia cada fin de semana?", "es_paella"),
        ("Wann muss der Nutzer zum Arzt für die Zähne?", "de_dentist"),
        ("ユーザーは休みの日に何をしますか？", "ja_mountain"),
        ("用户平时做什么运动？", "zh_running"),
        ("사용자는 어떤 동물에 민감한가요?", "ko_allergy"),
        ("Кем трудится пользователь?", "ru_programmer"),
        ("Does the user still own a motorcycle?", "motorbike"),
    ),
    exact_terms=(
        ("Radiohead", "band"),
        ("Tomasz", "brother"),
        ("Patagonia", "patagonia"),
        ("Murakami", "novel"),
        ("Biscuit", "pet"),
        ("5521 9034", "phone"),
        ("paella", "es_paella"),
        ("Zahnarzt", "de_dentist"),
        ("السوق", "ar_market"),
        ("अदरक", "hi_tea"),
    ),
    unrelated=(
        ("What is the boiling point of mercury?", "Latin"),
        ("How do tectonic plates drift?", "Latin"),
        ("Comment fonctionne un moteur à réaction ?", "Latin"),
        ("火山の噴火はなぜ起こるのか", "CJK"),
        ("黑洞是怎么形成的？", "CJK"),
        ("Какая столица у Монголии?", "Cyrillic"),
        ("Как устроен реактивный двигатель?", "Cyrillic"),
        ("블랙홀은 어떻게 만들어지나요?", "Hangul"),
        ("화산은 왜 폭발하나요?", "Hangul"),
        ("ما هي عاصمة كندا؟", "Arabic"),
        ("كيف تتكون النجوم؟", "Arabic"),
        ("सूर्य ग्रहण कैसे होता है?", "Devanagari"),
        ("ज्वालामुखी क्यों फटते हैं?", "Devanagari"),
    ),
)

PARTS = (TUNING, HELD_OUT)
