"""English value spaces of MemSim's daily-life scenario (seed 000, Table 23).

MemSim ships its value spaces only in Chinese (meta_profile.csv); these English ones
follow the same attributes and sizes, with names, cities and companies written for
English speakers. Conditional samplers in :mod:`.network` draw from these tables.
"""

from __future__ import annotations

from .values import ValueSpace

FIRST_NAMES = {
    "male": (
        "James",
        "Robert",
        "Michael",
        "David",
        "Daniel",
        "Thomas",
        "Andrew",
        "Kevin",
        "Brian",
        "Ethan",
        "Samuel",
        "Henry",
        "Oliver",
        "Lucas",
        "Nathan",
        "Ryan",
        "Aaron",
        "Victor",
        "Peter",
        "Leo",
    ),
    "female": (
        "Mary",
        "Linda",
        "Emma",
        "Sophia",
        "Olivia",
        "Grace",
        "Chloe",
        "Hannah",
        "Laura",
        "Nora",
        "Alice",
        "Julia",
        "Rachel",
        "Megan",
        "Claire",
        "Fiona",
        "Ruby",
        "Irene",
        "Diana",
        "Helen",
    ),
}
SURNAMES = (
    "Smith",
    "Johnson",
    "Brown",
    "Taylor",
    "Walker",
    "Harris",
    "Clark",
    "Lewis",
    "Young",
    "King",
    "Wright",
    "Scott",
    "Green",
    "Baker",
    "Adams",
    "Nelson",
    "Carter",
    "Mitchell",
    "Turner",
    "Parker",
)

#: city -> one-line description (the post-processing "city description" step)
CITIES = {
    "New York": "the largest US city, a global center of finance and media",
    "Boston": "a historic city known for its universities and biotech industry",
    "Chicago": "a Midwestern hub famous for its architecture and deep-dish pizza",
    "San Francisco": "a hilly bay city at the heart of the tech industry",
    "Seattle": "a rainy Pacific Northwest city home to coffee chains and software giants",
    "Austin": "a Texas capital known for live music and a fast-growing tech scene",
    "Denver": "a mile-high city at the foot of the Rocky Mountains",
    "Miami": "a sunny coastal city known for beaches and Latin culture",
    "Atlanta": "a Southern transport hub with the world's busiest airport",
    "Philadelphia": "the city where the Declaration of Independence was signed",
    "Portland": "a green city known for bridges, bikes and food trucks",
    "Nashville": "the home of country music",
}
WORK_CITIES = ("New York", "Boston", "Chicago", "San Francisco", "Seattle", "Austin", "Atlanta")

#: lowest to highest; aggregative questions count "at least" a level
EDUCATION = ("high school", "associate degree", "bachelor's degree", "master's degree", "doctorate")

#: occupation -> (lowest education index, junior positions, senior positions, employer kinds)
OCCUPATIONS = {
    "doctor": (
        2,
        ("resident doctor", "attending physician"),
        ("chief physician", "head of cardiology"),
        ("Hospital", "Medical Center"),
    ),
    "teacher": (2, ("math teacher", "English teacher"), ("head teacher", "vice principal"), ("High School", "Academy")),
    "engineer": (
        1,
        ("junior engineer", "field engineer"),
        ("senior engineer", "chief engineer"),
        ("Engineering", "Technologies"),
    ),
    "lawyer": (
        2,
        ("associate lawyer", "legal counsel"),
        ("senior partner", "managing partner"),
        ("Law Firm", "Legal Group"),
    ),
    "police officer": (
        0,
        ("patrol officer", "detective"),
        ("police sergeant", "police captain"),
        ("Police Department", "Police Precinct"),
    ),
    "nurse": (1, ("staff nurse", "clinic nurse"), ("head nurse", "nursing director"), ("Hospital", "Clinic")),
    "chef": (0, ("line cook", "pastry chef"), ("head chef", "executive chef"), ("Bistro", "Grill")),
    "programmer": (
        1,
        ("junior developer", "backend developer"),
        ("tech lead", "engineering manager"),
        ("Software", "Labs"),
    ),
    "salesperson": (
        0,
        ("sales representative", "account executive"),
        ("sales manager", "regional sales director"),
        ("Trading", "Retail Group"),
    ),
    "accountant": (
        1,
        ("staff accountant", "auditor"),
        ("senior accountant", "finance manager"),
        ("Accounting", "Financial Services"),
    ),
    "bank teller": (
        0,
        ("teller", "customer service teller"),
        ("head teller", "branch manager"),
        ("Bank", "Savings Bank"),
    ),
    "designer": (
        1,
        ("graphic designer", "UI designer"),
        ("art director", "design director"),
        ("Design Studio", "Creative"),
    ),
    "journalist": (
        2,
        ("reporter", "news writer"),
        ("chief reporter", "editor-in-chief"),
        ("Daily News", "Media Group"),
    ),
    "courier": (0, ("delivery driver", "courier"), ("route supervisor", "station manager"), ("Express", "Logistics")),
    "construction worker": (
        0,
        ("bricklayer", "carpenter"),
        ("site foreman", "project manager"),
        ("Construction", "Builders"),
    ),
    "translator": (
        2,
        ("translator", "interpreter"),
        ("senior translator", "head of translation"),
        ("Translation Services", "Language Center"),
    ),
}
COMPANY_WORDS = (
    "Summit",
    "Harbor",
    "Riverside",
    "Pioneer",
    "Evergreen",
    "Liberty",
    "Crescent",
    "Maple",
    "Northstar",
    "Bluewater",
    "Oakridge",
    "Silverline",
)

HOBBIES = (
    "reading",
    "traveling",
    "sports",
    "listening to music",
    "watching movies",
    "painting",
    "photography",
    "dancing",
    "yoga",
    "working out",
    "cooking",
    "gardening",
    "crafts",
    "model making",
    "stamp collecting",
    "running",
    "cycling",
    "swimming",
    "hiking",
    "rock climbing",
    "fishing",
    "golf",
    "chess",
    "playing video games",
    "coding",
    "learning languages",
    "writing",
    "calligraphy",
    "theater",
    "going to concerts",
)
PERSONALITIES = ("optimistic", "introverted", "warm-hearted", "patient", "outgoing")
PHONE_PREFIXES = ("201", "312", "415", "617", "646", "206", "512", "404")
BANK_PREFIXES = ("411111", "424242", "450875", "510510", "543210", "601100", "371449", "522233")

#: relationship -> (gender or None, age offset low, high, shares the user's surname)
RELATIVES = {
    "father": ("male", 22, 35, True),
    "mother": ("female", 20, 33, False),
    "uncle": ("male", 8, 25, False),
    "aunt": ("female", 8, 25, False),
    "older brother": ("male", 1, 8, True),
    "younger brother": ("male", -8, -1, True),
    "older sister": ("female", 1, 8, False),
    "younger sister": ("female", -8, -1, False),
    "cousin": (None, -6, 6, False),
}
#: relationship -> (age offset low, high, senior position)
COLLEAGUES = {"boss": (3, 15, True), "assistant": (-12, -2, False), "colleague": (-6, 6, False)}

WORK_EVENT_TYPES = {
    "business meeting": "review quarterly results and agree on next steps",
    "training course": "learn new skills from experienced trainers",
    "job fair": "meet employers and talk about open positions",
    "product launch": "see the new products presented for the first time",
    "industry forum": "discuss trends and share experience with peers",
    "team-building day": "take part in outdoor games that bring the team together",
    "annual review meeting": "look back on the year and hand out awards",
    "project kickoff": "set goals and split the work for a new project",
    "academic conference": "listen to talks and present recent research",
    "innovation workshop": "brainstorm ideas and build quick prototypes",
}
FUN_EVENT_TYPES = {
    "trip": "travel together and visit local sights",
    "book club": "read and discuss a chosen book",
    "movie night": "watch a film and chat about it afterwards",
    "fitness class": "exercise together under a coach",
    "food festival": "taste dishes from many local vendors",
    "concert": "enjoy live music from several bands",
    "art exhibition": "see works by local artists",
    "friends' party": "catch up with friends over food and games",
    "shopping trip": "browse shops and look for bargains",
    "hike": "walk a scenic trail and enjoy the views",
}
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
WEEKS = ("this coming", "next", "the week after next")
HOURS = ("9 AM", "10 AM", "2 PM", "3 PM", "7 PM", "8 PM")

PLACES = {
    "residential community": (
        "Sunshine Gardens",
        "Oasis Home",
        "Century Park Homes",
        "Maple Court",
        "Lakeside Villas",
        "Golden Meadows",
    ),
    "park": (
        "Bayfront Park",
        "Lotus Hill Park",
        "East Lake Park",
        "Central Park",
        "Riverside Park",
        "Botanical Garden",
    ),
    "shopping mall": (
        "Westfield Plaza",
        "Grand Mall",
        "Harbor Center",
        "Galleria",
        "City Square Mall",
        "Outlet Village",
    ),
    "hospital": (
        "General Hospital",
        "Children's Hospital",
        "Eye Clinic",
        "Dental Center",
        "Memorial Hospital",
        "Heart Institute",
    ),
    "scenic spot": (
        "Happy Valley",
        "Window of the World",
        "Ocean World",
        "Safari Park",
        "Old Town",
        "Seaside Promenade",
    ),
}
PLACE_RELATIONS = {
    "residential community": ("live in",),
    "park": ("visit", "pass by"),
    "shopping mall": ("visit", "pass by"),
    "hospital": ("visit", "pass by"),
    "scenic spot": ("visit", "pass by"),
}
PLACE_PROS = (
    "it is clean and quiet",
    "the staff are friendly",
    "it is easy to reach by subway",
    "there is a lot of greenery",
    "it never feels crowded in the morning",
)
PLACE_CONS = (
    "parking is hard to find",
    "it gets noisy on weekends",
    "there are too few places to eat",
    "the signs are confusing",
    "it closes too early",
)

ITEMS = {
    "phone": ("iPhone 13", "iPhone 14", "Galaxy S23", "Pixel 8", "OnePlus 11", "Xperia 5"),
    "home appliance": (
        "Dyson vacuum cleaner",
        "LG fridge",
        "Samsung washing machine",
        "Bosch dishwasher",
        "Sony TV",
        "Philips air purifier",
    ),
    "cosmetics": (
        "Lancome perfume",
        "Estee Lauder serum",
        "MAC lipstick",
        "Dior perfume",
        "Clinique moisturizer",
        "SK-II essence",
    ),
    "sports shoes": (
        "Nike Pegasus",
        "Adidas Ultraboost",
        "ASICS Gel-Kayano",
        "New Balance 1080",
        "Puma Velocity",
        "Hoka Clifton",
    ),
}
ITEM_RELATIONS = ("like", "own", "use")
ITEM_PROS = (
    "it works really well",
    "it looks great",
    "it was worth the price",
    "it is very comfortable",
    "it is easy to use",
)
ITEM_CONS = (
    "the battery could last longer",
    "it is a bit heavy",
    "it scratches easily",
    "it is rather loud",
    "the color fades quickly",
)

SCALES = (10, 20, 50, 100, 200, 300, 500, 800, 1000, 2000, 3000, 5000)
DURATION_UNITS = (1, 7, 30)

SPACE = ValueSpace(
    lang="en",
    first_names=FIRST_NAMES,
    surnames=SURNAMES,
    full_names=(),
    cities=CITIES,
    work_cities=WORK_CITIES,
    education=EDUCATION,
    occupations=OCCUPATIONS,
    company_words=COMPANY_WORDS,
    hobbies=HOBBIES,
    personalities=PERSONALITIES,
    phone_prefixes=PHONE_PREFIXES,
    bank_prefixes=BANK_PREFIXES,
    relatives=RELATIVES,
    colleagues=COLLEAGUES,
    work_event_types=WORK_EVENT_TYPES,
    fun_event_types=FUN_EVENT_TYPES,
    weekdays=WEEKDAYS,
    weeks=WEEKS,
    hours=HOURS,
    places=PLACES,
    place_relations=PLACE_RELATIONS,
    place_pros=PLACE_PROS,
    place_cons=PLACE_CONS,
    items=ITEMS,
    item_relations=ITEM_RELATIONS,
    item_pros=ITEM_PROS,
    item_cons=ITEM_CONS,
    scales=SCALES,
    duration_units=DURATION_UNITS,
    genders=("male", "female"),
)
