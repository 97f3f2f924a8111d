"""memplug's own knowledge base of subject-relation-object facts for the factcon generator.

Written for this project (no downloads): real-world facts of the kind MQuAKE edits
(capitals, authors, spouses, founders, sports), chosen so that they chain into 2-4 hop
questions (book -> author -> spouse -> birthplace -> country). Each (subject, relation)
has one object, so every chain has one answer. Entities carry a type so that a
counterfactual edit replaces an object by another of the same type.
"""

from __future__ import annotations

import functools
from collections import defaultdict

import attrs

# (country, capital, continent, official language)
COUNTRIES = (
    ("France", "Paris", "Europe", "French"),
    ("Germany", "Berlin", "Europe", "German"),
    ("Italy", "Rome", "Europe", "Italian"),
    ("Spain", "Madrid", "Europe", "Spanish"),
    ("Portugal", "Lisbon", "Europe", "Portuguese"),
    ("United Kingdom", "London", "Europe", "English"),
    ("Ireland", "Dublin", "Europe", "Irish"),
    ("Netherlands", "Amsterdam", "Europe", "Dutch"),
    ("Sweden", "Stockholm", "Europe", "Swedish"),
    ("Norway", "Oslo", "Europe", "Norwegian"),
    ("Finland", "Helsinki", "Europe", "Finnish"),
    ("Denmark", "Copenhagen", "Europe", "Danish"),
    ("Poland", "Warsaw", "Europe", "Polish"),
    ("Greece", "Athens", "Europe", "Greek"),
    ("Austria", "Vienna", "Europe", "German"),
    ("Hungary", "Budapest", "Europe", "Hungarian"),
    ("Czech Republic", "Prague", "Europe", "Czech"),
    ("Switzerland", "Bern", "Europe", "German"),
    ("Russia", "Moscow", "Europe", "Russian"),
    ("Turkey", "Ankara", "Asia", "Turkish"),
    ("Japan", "Tokyo", "Asia", "Japanese"),
    ("China", "Beijing", "Asia", "Chinese"),
    ("South Korea", "Seoul", "Asia", "Korean"),
    ("India", "New Delhi", "Asia", "Hindi"),
    ("Thailand", "Bangkok", "Asia", "Thai"),
    ("Vietnam", "Hanoi", "Asia", "Vietnamese"),
    ("Indonesia", "Jakarta", "Asia", "Indonesian"),
    ("Iran", "Tehran", "Asia", "Persian"),
    ("Egypt", "Cairo", "Africa", "Arabic"),
    ("Kenya", "Nairobi", "Africa", "Swahili"),
    ("Nigeria", "Abuja", "Africa", "English"),
    ("Morocco", "Rabat", "Africa", "Arabic"),
    ("United States of America", "Washington, D.C.", "North America", "English"),
    ("Canada", "Ottawa", "North America", "English"),
    ("Mexico", "Mexico City", "North America", "Spanish"),
    ("Cuba", "Havana", "North America", "Spanish"),
    ("Brazil", "Brasília", "South America", "Portuguese"),
    ("Argentina", "Buenos Aires", "South America", "Spanish"),
    ("Chile", "Santiago", "South America", "Spanish"),
    ("Colombia", "Bogotá", "South America", "Spanish"),
    ("Peru", "Lima", "South America", "Spanish"),
    ("Australia", "Canberra", "Oceania", "English"),
    ("New Zealand", "Wellington", "Oceania", "English"),
)

# (city, country) for cities that are not capitals
CITIES = (
    ("Manchester", "United Kingdom"),
    ("Liverpool", "United Kingdom"),
    ("Edinburgh", "United Kingdom"),
    ("Stratford-upon-Avon", "United Kingdom"),
    ("Portsmouth", "United Kingdom"),
    ("Torquay", "United Kingdom"),
    ("Oxford", "United Kingdom"),
    ("Cambridge", "United Kingdom"),
    ("Exeter", "United Kingdom"),
    ("Yate", "United Kingdom"),
    ("Munich", "Germany"),
    ("Hamburg", "Germany"),
    ("Frankfurt", "Germany"),
    ("Ulm", "Germany"),
    ("Herzogenaurach", "Germany"),
    ("Wolfsburg", "Germany"),
    ("Gelsenkirchen", "Germany"),
    ("Milan", "Italy"),
    ("Florence", "Italy"),
    ("Turin", "Italy"),
    ("Maranello", "Italy"),
    ("Carrara", "Italy"),
    ("Alessandria", "Italy"),
    ("Barcelona", "Spain"),
    ("Manacor", "Spain"),
    ("Alcalá de Henares", "Spain"),
    ("Lyon", "France"),
    ("Marseille", "France"),
    ("Besançon", "France"),
    ("Saumur", "France"),
    ("Rotterdam", "Netherlands"),
    ("Eindhoven", "Netherlands"),
    ("Gothenburg", "Sweden"),
    ("Vimmerby", "Sweden"),
    ("Skien", "Norway"),
    ("Odense", "Denmark"),
    ("Billund", "Denmark"),
    ("Kraków", "Poland"),
    ("Salzburg", "Austria"),
    ("Zurich", "Switzerland"),
    ("Basel", "Switzerland"),
    ("Geneva", "Switzerland"),
    ("Saint Petersburg", "Russia"),
    ("Istanbul", "Turkey"),
    ("Osaka", "Japan"),
    ("Kyoto", "Japan"),
    ("Nagoya", "Japan"),
    ("Hamamatsu", "Japan"),
    ("Shanghai", "China"),
    ("Hangzhou", "China"),
    ("Shenzhen", "China"),
    ("Busan", "South Korea"),
    ("Mumbai", "India"),
    ("Kolkata", "India"),
    ("Hyderabad", "India"),
    ("Madurai", "India"),
    ("Motihari", "India"),
    ("Alexandria", "Egypt"),
    ("Giza", "Egypt"),
    ("Ibadan", "Nigeria"),
    ("Funchal", "Portugal"),
    ("Porto", "Portugal"),
    ("New York City", "United States of America"),
    ("Los Angeles", "United States of America"),
    ("Chicago", "United States of America"),
    ("Seattle", "United States of America"),
    ("San Francisco", "United States of America"),
    ("Honolulu", "United States of America"),
    ("Cupertino", "United States of America"),
    ("Redmond", "United States of America"),
    ("Mountain View", "United States of America"),
    ("Menlo Park", "United States of America"),
    ("Dearborn", "United States of America"),
    ("Burbank", "United States of America"),
    ("Albuquerque", "United States of America"),
    ("Houston", "United States of America"),
    ("Minneapolis", "United States of America"),
    ("Duluth", "United States of America"),
    ("Gary", "United States of America"),
    ("Akron", "United States of America"),
    ("Baltimore", "United States of America"),
    ("Mobile", "United States of America"),
    ("Oak Park", "United States of America"),
    ("Saint Paul", "United States of America"),
    ("Montgomery", "United States of America"),
    ("Lorain", "United States of America"),
    ("Princeton", "United States of America"),
    ("Stanford", "United States of America"),
    ("Cambridge, Massachusetts", "United States of America"),
    ("New Haven", "United States of America"),
    ("Toronto", "Canada"),
    ("Montreal", "Canada"),
    ("Brantford", "Canada"),
    ("Rio de Janeiro", "Brazil"),
    ("São Paulo", "Brazil"),
    ("Três Corações", "Brazil"),
    ("Rosario", "Argentina"),
    ("Barranquilla", "Colombia"),
    ("Sydney", "Australia"),
    ("Melbourne", "Australia"),
)

# (university, city)
UNIVERSITIES = (
    ("Harvard University", "Cambridge, Massachusetts"),
    ("Princeton University", "Princeton"),
    ("Stanford University", "Stanford"),
    ("Columbia University", "New York City"),
    ("Yale University", "New Haven"),
    ("Howard University", "Washington, D.C."),
    ("University of Oxford", "Oxford"),
    ("University of Cambridge", "Cambridge"),
    ("University of Exeter", "Exeter"),
    ("ETH Zurich", "Zurich"),
    ("University of Paris", "Paris"),
    ("Waseda University", "Tokyo"),
    ("University of Tokyo", "Tokyo"),
    ("Cairo University", "Giza"),
    ("University of Ibadan", "Ibadan"),
    ("University of Turin", "Turin"),
    ("Peking University", "Beijing"),
)

# (name, citizenship, birthplace, university, employer, field); None where unknown or disputed
PEOPLE = (
    ("Barack Obama", "United States of America", "Honolulu", "Columbia University", None, "politics"),
    ("Michelle Obama", "United States of America", "Chicago", "Princeton University", None, "law"),
    ("Bill Clinton", "United States of America", None, "Yale University", None, "politics"),
    ("Hillary Clinton", "United States of America", "Chicago", "Yale University", None, "politics"),
    ("Albert Einstein", None, "Ulm", "ETH Zurich", None, "physics"),
    ("Marie Curie", None, "Warsaw", "University of Paris", None, "chemistry"),
    ("Pierre Curie", "France", "Paris", "University of Paris", None, "physics"),
    ("William Shakespeare", None, "Stratford-upon-Avon", None, None, "drama"),
    ("Anne Hathaway", None, "Stratford-upon-Avon", None, None, None),
    ("Jane Austen", "United Kingdom", None, None, None, "literature"),
    ("Charles Dickens", "United Kingdom", "Portsmouth", None, None, "literature"),
    ("Catherine Dickens", "United Kingdom", "Edinburgh", None, None, None),
    ("J. K. Rowling", "United Kingdom", "Yate", "University of Exeter", None, "literature"),
    ("George Orwell", "United Kingdom", "Motihari", None, None, "journalism"),
    ("Agatha Christie", "United Kingdom", "Torquay", None, None, "literature"),
    ("Max Mallowan", "United Kingdom", "London", "University of Oxford", None, "archaeology"),
    ("Leo Tolstoy", "Russia", None, None, None, "literature"),
    ("Sophia Tolstaya", "Russia", "Moscow", None, None, None),
    ("Victor Hugo", "France", "Besançon", None, None, "literature"),
    ("Alexandre Dumas", "France", None, None, None, "literature"),
    ("Miguel de Cervantes", "Spain", "Alcalá de Henares", None, None, "literature"),
    ("Dante Alighieri", "Italy", "Florence", None, None, "poetry"),
    ("Umberto Eco", "Italy", "Alessandria", "University of Turin", None, "semiotics"),
    ("Johann Wolfgang von Goethe", "Germany", "Frankfurt", None, None, "literature"),
    ("Franz Kafka", None, "Prague", None, None, "literature"),
    ("Astrid Lindgren", "Sweden", "Vimmerby", None, None, "literature"),
    ("Henrik Ibsen", "Norway", "Skien", None, None, "drama"),
    ("Hans Christian Andersen", "Denmark", "Odense", None, None, "literature"),
    ("Haruki Murakami", "Japan", "Kyoto", "Waseda University", None, "literature"),
    ("Gabriel García Márquez", "Colombia", None, None, None, "literature"),
    ("Jorge Luis Borges", "Argentina", "Buenos Aires", None, None, "literature"),
    ("Paulo Coelho", "Brazil", "Rio de Janeiro", None, None, "literature"),
    ("Chinua Achebe", "Nigeria", None, "University of Ibadan", None, "literature"),
    ("Naguib Mahfouz", "Egypt", "Cairo", "Cairo University", None, "literature"),
    ("Rabindranath Tagore", "India", "Kolkata", None, None, "poetry"),
    ("Orhan Pamuk", "Turkey", "Istanbul", None, None, "literature"),
    ("F. Scott Fitzgerald", "United States of America", "Saint Paul", "Princeton University", None, "literature"),
    ("Zelda Fitzgerald", "United States of America", "Montgomery", None, None, "painting"),
    ("Ernest Hemingway", "United States of America", "Oak Park", None, None, "journalism"),
    ("Mark Twain", "United States of America", None, None, None, "literature"),
    ("Toni Morrison", "United States of America", "Lorain", "Howard University", None, "literature"),
    ("Steve Jobs", "United States of America", "San Francisco", None, None, "business"),
    ("Bill Gates", "United States of America", "Seattle", "Harvard University", None, "business"),
    ("Larry Page", "United States of America", None, "Stanford University", None, "computer science"),
    ("Mark Zuckerberg", "United States of America", None, "Harvard University", None, "computer science"),
    ("Priscilla Chan", "United States of America", None, "Harvard University", None, "medicine"),
    ("Jeff Bezos", "United States of America", "Albuquerque", "Princeton University", None, "business"),
    ("Akio Morita", "Japan", "Nagoya", None, None, "business"),
    ("Soichiro Honda", "Japan", "Hamamatsu", None, None, "engineering"),
    ("Enzo Ferrari", "Italy", None, None, None, "motor racing"),
    ("Jack Ma", "China", "Hangzhou", None, None, "business"),
    ("Adolf Dassler", "Germany", "Herzogenaurach", None, None, "shoemaking"),
    ("Rudolf Dassler", "Germany", "Herzogenaurach", None, None, "shoemaking"),
    ("Henry Ford", "United States of America", None, None, None, "engineering"),
    ("Walt Disney", "United States of America", "Chicago", None, None, "animation"),
    ("Coco Chanel", "France", "Saumur", None, None, "fashion"),
    ("Giorgio Armani", "Italy", None, None, None, "fashion"),
    ("Tim Cook", "United States of America", "Mobile", None, "Apple", "business"),
    ("Satya Nadella", "United States of America", "Hyderabad", None, "Microsoft", "business"),
    ("Sundar Pichai", "United States of America", "Madurai", "Stanford University", "Google", "business"),
    ("Andy Jassy", "United States of America", None, "Harvard University", "Amazon", "business"),
    ("Michael Jackson", "United States of America", "Gary", None, None, "music"),
    ("John Lennon", "United Kingdom", "Liverpool", None, None, "music"),
    ("Yoko Ono", "Japan", "Tokyo", None, None, "art"),
    ("Bob Dylan", "United States of America", "Duluth", None, None, "music"),
    ("Prince", "United States of America", "Minneapolis", None, None, "music"),
    ("Adele", "United Kingdom", "London", None, None, "music"),
    ("Beyoncé", "United States of America", "Houston", None, None, "music"),
    ("Jay-Z", "United States of America", "New York City", None, None, "music"),
    ("Shakira", "Colombia", "Barranquilla", None, None, "music"),
    ("Psy", "South Korea", "Seoul", None, None, "music"),
    ("Victoria Beckham", "United Kingdom", None, None, None, "fashion"),
)

# (name, sport, citizenship, birthplace, position)
ATHLETES = (
    ("Lionel Messi", "association football", "Argentina", "Rosario", "forward"),
    ("Cristiano Ronaldo", "association football", "Portugal", "Funchal", "forward"),
    ("Zinedine Zidane", "association football", "France", "Marseille", "midfielder"),
    ("Pelé", "association football", "Brazil", "Três Corações", "forward"),
    ("Manuel Neuer", "association football", "Germany", "Gelsenkirchen", "goalkeeper"),
    ("Gianluigi Buffon", "association football", "Italy", "Carrara", "goalkeeper"),
    ("David Beckham", "association football", "United Kingdom", "London", "midfielder"),
    ("Michael Jordan", "basketball", "United States of America", "New York City", "shooting guard"),
    ("LeBron James", "basketball", "United States of America", "Akron", "small forward"),
    ("Yao Ming", "basketball", "China", "Shanghai", "center"),
    ("Wayne Gretzky", "ice hockey", "Canada", "Brantford", "centre"),
    ("Sachin Tendulkar", "cricket", "India", "Mumbai", "batsman"),
    ("Babe Ruth", "baseball", "United States of America", "Baltimore", "outfielder"),
    ("Ichiro Suzuki", "baseball", "Japan", None, "right fielder"),
    ("Tom Brady", "American football", "United States of America", None, "quarterback"),
    ("Roger Federer", "tennis", "Switzerland", "Basel", None),
    ("Rafael Nadal", "tennis", "Spain", "Manacor", None),
    ("Serena Williams", "tennis", "United States of America", None, None),
    ("Jonny Wilkinson", "rugby union", "United Kingdom", None, "fly-half"),
    ("Tiger Woods", "golf", "United States of America", None, None),
)

# (sport, country where it was created)
SPORTS = (
    ("association football", "United Kingdom"),
    ("basketball", "United States of America"),
    ("baseball", "United States of America"),
    ("American football", "United States of America"),
    ("volleyball", "United States of America"),
    ("ice hockey", "Canada"),
    ("rugby union", "United Kingdom"),
    ("cricket", "United Kingdom"),
    ("tennis", "United Kingdom"),
    ("golf", "United Kingdom"),
    ("judo", "Japan"),
    ("karate", "Japan"),
    ("taekwondo", "South Korea"),
    ("pesäpallo", "Finland"),
)

# (book, author, language)
BOOKS = (
    ("Hamlet", "William Shakespeare", "English"),
    ("Pride and Prejudice", "Jane Austen", "English"),
    ("Our Mutual Friend", "Charles Dickens", "English"),
    ("Harry Potter and the Philosopher's Stone", "J. K. Rowling", "English"),
    ("Nineteen Eighty-Four", "George Orwell", "English"),
    ("Murder on the Orient Express", "Agatha Christie", "English"),
    ("War and Peace", "Leo Tolstoy", "Russian"),
    ("Les Misérables", "Victor Hugo", "French"),
    ("The Three Musketeers", "Alexandre Dumas", "French"),
    ("Don Quixote", "Miguel de Cervantes", "Spanish"),
    ("The Divine Comedy", "Dante Alighieri", "Italian"),
    ("The Name of the Rose", "Umberto Eco", "Italian"),
    ("Faust", "Johann Wolfgang von Goethe", "German"),
    ("The Trial", "Franz Kafka", "German"),
    ("Pippi Longstocking", "Astrid Lindgren", "Swedish"),
    ("A Doll's House", "Henrik Ibsen", "Norwegian"),
    ("The Little Mermaid", "Hans Christian Andersen", "Danish"),
    ("Norwegian Wood", "Haruki Murakami", "Japanese"),
    ("One Hundred Years of Solitude", "Gabriel García Márquez", "Spanish"),
    ("Ficciones", "Jorge Luis Borges", "Spanish"),
    ("The Alchemist", "Paulo Coelho", "Portuguese"),
    ("Things Fall Apart", "Chinua Achebe", "English"),
    ("Palace Walk", "Naguib Mahfouz", "Arabic"),
    ("Gitanjali", "Rabindranath Tagore", "Bengali"),
    ("My Name Is Red", "Orhan Pamuk", "Turkish"),
    ("The Great Gatsby", "F. Scott Fitzgerald", "English"),
    ("The Old Man and the Sea", "Ernest Hemingway", "English"),
    ("Adventures of Huckleberry Finn", "Mark Twain", "English"),
    ("Beloved", "Toni Morrison", "English"),
)

# (company, founder, headquarters city)
COMPANIES = (
    ("Apple", "Steve Jobs", "Cupertino"),
    ("Microsoft", "Bill Gates", "Redmond"),
    ("Google", "Larry Page", "Mountain View"),
    ("Facebook", "Mark Zuckerberg", "Menlo Park"),
    ("Amazon", "Jeff Bezos", "Seattle"),
    ("Sony", "Akio Morita", "Tokyo"),
    ("Honda", "Soichiro Honda", "Tokyo"),
    ("Ferrari", "Enzo Ferrari", "Maranello"),
    ("Alibaba Group", "Jack Ma", "Hangzhou"),
    ("Adidas", "Adolf Dassler", "Herzogenaurach"),
    ("Puma", "Rudolf Dassler", "Herzogenaurach"),
    ("Ford Motor Company", "Henry Ford", "Dearborn"),
    ("The Walt Disney Company", "Walt Disney", "Burbank"),
    ("Chanel", "Coco Chanel", "Paris"),
    ("Armani", "Giorgio Armani", "Milan"),
    ("Volkswagen", None, "Wolfsburg"),
    ("BMW", None, "Munich"),
    ("Philips", None, "Amsterdam"),
    ("Nintendo", None, "Kyoto"),
    ("Spotify", None, "Stockholm"),
    ("LEGO", None, "Billund"),
    ("Tencent", None, "Shenzhen"),
    ("Rolex", None, "Geneva"),
)

# married couples; each gives a P26 fact in both directions
SPOUSES = (
    ("Barack Obama", "Michelle Obama"),
    ("Bill Clinton", "Hillary Clinton"),
    ("Pierre Curie", "Marie Curie"),
    ("William Shakespeare", "Anne Hathaway"),
    ("Charles Dickens", "Catherine Dickens"),
    ("Agatha Christie", "Max Mallowan"),
    ("Leo Tolstoy", "Sophia Tolstaya"),
    ("F. Scott Fitzgerald", "Zelda Fitzgerald"),
    ("Mark Zuckerberg", "Priscilla Chan"),
    ("John Lennon", "Yoko Ono"),
    ("Beyoncé", "Jay-Z"),
    ("David Beckham", "Victoria Beckham"),
)

# (song, performer)
SONGS = (
    ("Thriller", "Michael Jackson"),
    ("Imagine", "John Lennon"),
    ("Like a Rolling Stone", "Bob Dylan"),
    ("Purple Rain", "Prince"),
    ("Rolling in the Deep", "Adele"),
    ("Halo", "Beyoncé"),
    ("Empire State of Mind", "Jay-Z"),
    ("Hips Don't Lie", "Shakira"),
    ("Gangnam Style", "Psy"),
)


@attrs.frozen
class Fact:
    """One subject-relation-object triple; ``relation`` is a Wikidata property id (``"P36"``)."""

    subject: str
    relation: str
    object: str


@attrs.frozen
class KnowledgeBase:
    """Facts indexed by (subject, relation), and the type of every entity."""

    facts: dict[tuple[str, str], str]
    types: dict[str, str]
    #: kind -> its entities, and subject -> its relations, each sorted (indexes of the two above)
    _by_type: dict[str, tuple[str, ...]] = attrs.field(init=False, eq=False, repr=False)
    _relations: dict[str, tuple[str, ...]] = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        by_type: dict[str, list[str]] = defaultdict(list)
        for entity, kind in sorted(self.types.items()):
            by_type[kind].append(entity)
        relations: dict[str, list[str]] = defaultdict(list)
        for subject, relation in sorted(self.facts):
            relations[subject].append(relation)
        object.__setattr__(self, "_by_type", {k: tuple(v) for k, v in by_type.items()})
        object.__setattr__(self, "_relations", {k: tuple(v) for k, v in relations.items()})

    def get(self, subject: str, relation: str) -> str | None:
        return self.facts.get((subject, relation))

    def of_type(self, kind: str) -> list[str]:
        return list(self._by_type.get(kind, ()))

    def relations_of(self, subject: str) -> list[str]:
        return list(self._relations.get(subject, ()))

    def all_facts(self) -> list[Fact]:
        return [Fact(s, r, o) for (s, r), o in sorted(self.facts.items())]


class _Builder:
    def __init__(self) -> None:
        self.facts: dict[tuple[str, str], str] = {}
        self.types: dict[str, str] = {}

    def entity(self, name: str, kind: str) -> None:
        known = self.types.setdefault(name, kind)
        if known != kind:
            raise ValueError(f"{name!r} is both a {known} and a {kind}")

    def add(self, subject: str, relation: str, obj: str | None, kind: str) -> None:
        if obj is None:
            return
        self.entity(obj, kind)
        old = self.facts.setdefault((subject, relation), obj)
        if old != obj:
            raise ValueError(f"two objects for ({subject}, {relation}): {old!r} and {obj!r}")


@functools.cache
def knowledge_base() -> KnowledgeBase:
    """The built-in knowledge base (built once; ValueError if the tables contradict themselves)."""
    b = _Builder()
    for country, capital, continent, language in COUNTRIES:
        b.entity(country, "country")
        b.add(country, "P36", capital, "city")
        b.add(capital, "P17", country, "country")
        b.add(country, "P30", continent, "continent")
        b.add(country, "P37", language, "language")
    for city, country in CITIES:
        b.entity(city, "city")
        b.add(city, "P17", country, "country")
    for university, city in UNIVERSITIES:
        b.entity(university, "university")
        b.add(university, "P131", city, "city")
    for name, citizenship, birthplace, alma_mater, employer, field in PEOPLE:
        b.entity(name, "person")
        b.add(name, "P27", citizenship, "country")
        b.add(name, "P19", birthplace, "city")
        b.add(name, "P69", alma_mater, "university")
        b.add(name, "P108", employer, "company")
        b.add(name, "P106", field, "field")
    for name, sport, citizenship, birthplace, position in ATHLETES:
        b.entity(name, "person")
        b.add(name, "P641", sport, "sport")
        b.add(name, "P27", citizenship, "country")
        b.add(name, "P19", birthplace, "city")
        b.add(name, "P413", position, "position")
    for sport, country in SPORTS:
        b.entity(sport, "sport")
        b.add(sport, "P495", country, "country")
    for book, author, language in BOOKS:
        b.entity(book, "book")
        b.add(book, "P50", author, "person")
        b.add(book, "P407", language, "language")
    for company, founder, hq in COMPANIES:
        b.entity(company, "company")
        b.add(company, "P112", founder, "person")
        b.add(company, "P159", hq, "city")
    for a, c in SPOUSES:
        b.add(a, "P26", c, "person")
        b.add(c, "P26", a, "person")
    for song, performer in SONGS:
        b.entity(song, "song")
        b.add(song, "P175", performer, "person")
    return KnowledgeBase(b.facts, b.types)
