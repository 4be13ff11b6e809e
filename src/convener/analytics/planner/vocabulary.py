"""The words the planner knows: aggregates, superlatives, buckets, comparisons, filler and the like."""

from __future__ import annotations


# --- Vocabulary --------------------------------------------------------------------------------------------

AVG, SUM, MIN, MAX, MEDIAN = "AVG", "SUM", "MIN", "MAX", "MEDIAN"
STDDEV_SAMP, STDDEV_POP, VAR_SAMP, VAR_POP = "STDDEV_SAMP", "STDDEV_POP", "VAR_SAMP", "VAR_POP"
_AGG_NAMES = {AVG: "average", SUM: "total", MIN: "minimum", MAX: "maximum", MEDIAN: "median",
              STDDEV_SAMP: "standard deviation", STDDEV_POP: "population standard deviation",
              VAR_SAMP: "variance", VAR_POP: "population variance"}

_AGG_WORDS = {
    "average": AVG, "avg": AVG, "mean": AVG, "typical": AVG, "typically": AVG, "usual": AVG, "averages": AVG,
    "averaged": AVG,
    "total": SUM, "sum": SUM, "combined": SUM, "altogether": SUM, "cumulative": SUM,
    "maximum": MAX, "max": MAX, "highest": MAX, "largest": MAX, "biggest": MAX, "greatest": MAX,
    "peak": MAX, "most": MAX, "best": MAX, "top": MAX, "record": MAX,
    "minimum": MIN, "min": MIN, "lowest": MIN, "smallest": MIN, "least": MIN, "fewest": MIN, "worst": MIN,
    "median": MEDIAN,
}
_LOW_WORDS = frozenset({
    "lowest", "smallest", "least", "fewest", "worst", "minimum", "min", "bottom", "cheapest", "coldest",
    "shortest", "lightest", "slowest", "weakest", "poorest", "earliest", "oldest", "quietest",
})
_BUSY_WORDS = frozenset({"busiest", "quietest"})
"""Superlatives of how many rows a group has ("the busiest airports": those with the most flights)."""
_FREQUENT = frozenset({"frequent", "frequently", "often", "common", "popular", "used"})  # "the most used planes"
"""After "most" or "least", how often a group's rows occur ("the 5 most frequent destinations"): the group's
number of rows."""
_HIGH_WORDS = frozenset({
    "highest", "largest", "biggest", "greatest", "most", "best", "top", "maximum", "max", "peak",
    "record",
})
_BUCKETS = {
    "daily": "day", "day": "day", "days": "day", "weekly": "week", "week": "week", "weeks": "week",
    "monthly": "month", "month": "month", "months": "month", "quarterly": "quarter", "quarter": "quarter",
    "quarters": "quarter", "yearly": "year", "annual": "year", "annually": "year", "year": "year",
    "years": "year",
}
_BUCKET_ADJECTIVES = frozenset({"daily", "weekly", "monthly", "quarterly", "yearly", "annual", "annually"})
_GROUP_MARKERS = (("grouped", "by"), ("broken", "down", "by"), ("split", "by"), ("for", "each"),
                  ("for", "every"), ("in", "each"), ("of", "each"), ("by",), ("per",), ("each",), ("every",),
                  ("across",))
_GROUP_FILLER = frozenset({"number", "of", "type", "types", "kind", "kinds", "different", "the", "a", "an",
                           "individual", "single", "its", "their", "category",
                           # "for each combination of species and island"
                           "combination", "combinations", "pair", "pairs"})
_COMPARATORS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("no", "more", "than"), "<="), (("no", "less", "than"), ">="), (("not", "more", "than"), "<="),
    (("more", "than"), ">"), (("greater", "than"), ">"), (("higher", "than"), ">"), (("larger", "than"), ">"),
    (("bigger", "than"), ">"), (("over",), ">"), (("above",), ">"), (("exceeding",), ">"), (("exceeds",), ">"),
    (("exceeded",), ">"), (("exceed",), ">"),
    (("at", "least"), ">="), (("minimum", "of"), ">="), (("fewer", "than"), "<"), (("less", "than"), "<"),
    (("lower", "than"), "<"), (("smaller", "than"), "<"), (("under",), "<"), (("below",), "<"),
    (("at", "most"), "<="), (("maximum", "of"), "<="), (("up", "to"), "<="), (("exactly",), "="),
    (("equal", "to"), "="), (("equals",), "="), ((">",), ">"), (("<",), "<"), ((">=",), ">="),
    (("<=",), "<="), (("=",), "="),
)
_COUNT_PHRASES = (("how", "many"), ("number", "of"), ("count", "of"), ("count",), ("counts",), ("how", "often"),
                  ("tally", "of"))
_DISTINCT_WORDS = frozenset({"different", "distinct", "unique", "separate"})
_LIST_WORDS = frozenset({"show", "list", "display", "find", "give", "get", "return", "see", "which", "fetch",
                         "view", "print", "rows", "records", "entries"})
_COMPARE_WORDS = frozenset({"compare", "compared", "comparing", "comparison", "vs", "versus", "against", "next",
                            "beside", "alongside"})
_MODIFY_VERBS = frozenset({"delete", "drop", "update", "insert", "truncate", "alter", "grant", "revoke",
                           "merge", "upsert", "remove", "modify", "erase", "wipe", "create", "replace", "set"})
_DDL_OBJECTS = frozenset({"table", "tables", "view", "index", "database", "schema", "function", "or"})
_UNSUPPORTED = frozenset({
    "percentage", "percent", "share", "proportion", "ratio", "fraction", "correlation", "correlated",
    "correlate", "variance", "deviation", "stddev", "percentile", "quantile", "growth", "increase",
    "increased", "decrease", "decreased", "difference", "rate", "cumulative", "running", "rolling", "moving",
    "forecast", "improved", "improvement", "declined", "drop",
})
"""Computations beyond counts, sums, averages, extremes and rankings: left unconsumed, they mean the
question asks for something this planner would silently get wrong."""
_TREND_WORDS = frozenset({"change", "changed", "changes", "evolve", "evolved", "trend", "trends", "develop",
                          "developed", "vary", "varied", "varies", "fluctuate", "fluctuated"})
_FUTURE_WORDS = frozenset({"tomorrow", "forecast", "forecasts", "predict", "predicted", "prediction",
                           "projected", "projection", "future", "will"})
VALUE_NOUNS = frozenset({"value", "values", "reading", "readings", "measurement", "measurements"})
"""Nouns for a column's value itself ("the value", "a delta 15 N measurement")."""
TRIP_END_WORDS = frozenset({"left", "leave", "leaves", "leaving", "depart", "departs", "departed", "departing",
                            "arrive", "arrives", "arrived", "arriving", "land", "lands", "landed", "landing",
                            "departure", "arrival"})
"""Words of leaving or reaching a place: which end of a trip a lateness or a place is of."""
DONE_NOT = frozenset({"didnt", "dont", "doesnt", "havent", "hasnt", "hadnt"})
"""Contractions of a denied doing or having, as tokenized without their apostrophe ("didn't go to Atlanta")."""
CONTRACTED_DENIALS = DONE_NOT | {"isnt", "wasnt", "werent", "arent"}
_NEGATIONS = frozenset({"not", "except", "excluding", "exclude", "without", "non", "other", "besides", "outside",
                        "ignoring", "ignore", "disregarding", "disregard", *CONTRACTED_DENIALS})
_YEAR_PREPOSITIONS = {"in": "=", "during": "=", "of": "=", "for": "=", "from": "=", "on": "=",
                      "after": ">", "since": ">=", "before": "<", "until": "<=", "through": "<=",
                      "by": "<="}
_UNITS = frozenset({"mm", "cm", "millimetres", "millimeters", "centimetres", "centimeters", "degrees",
                    "degree", "celsius", "lbs", "lb", "pounds", "pound", "kg", "mph", "dollars", "dollar",
                    "usd", "percent", "hp", "inches", "inch", "gallons", "seconds", "bushels", "thousand",
                    "thousands", "c", "f", "m", "s", "%", "$", "units", "points", "times", "feet", "foot", "ft",
                    "miles", "mile", "km", "minutes", "minute", "hours", "hour", "grams", "gram", "g", "metres",
                    "meters", "kilograms", "kilos"})
_FILLER = frozenset({
    "placed", "made", "sold", "bought", "purchased", "came", "come", "comes", "happened", "occurred", "took",
    "went", "go", "goes", "going", "flew", "flown", "arrived", "departed", "landed", "operated", "seen", "saw", "makes",
    "headed", "heading", "bound", "reach",
    "show", "pull", "list", "display", "find", "give", "get", "return", "see", "tell", "please", "me", "us", "data",
    "need", "want", "quick", "quickly", "check",
    "dataset", "table", "tables", "row", "rows", "record", "records", "entry", "entries", "value", "values",
    "many", "much", "number", "count", "total", "figure", "figures", "know", "like", "look", "looking",
    "ever", "still", "studied", "sampled", "surveyed", "recorded", "observed", "measured", "judged", "overall", "whole",
    "entire", "there", "exist", "exists",
    "have", "has", "had", "all", "every", "each", "per", "by", "kind", "type", "types", "kinds", "group",
    "grouped", "broken", "break", "split", "across", "compare", "compared", "vs", "versus", "against", "between",
    "top", "bottom", "first", "last", "which", "what", "whats", "along", "together", "respectively",
    "level", "levels", "amount", "quantity", "size", "stats", "statistics", "info", "information",
    "available", "sorted", "ordered", "order", "ranked", "rank", "ranking", "breakdown", "distribution",
    "different", "distinct", "unique", "individual", "typical", "typically", "usual", "roughly",
    "approximately", "exactly", "precisely", "sort", "including", "include", "includes", "over", "time",
    "period", "periods", "least", "most", "more", "less", "fewer", "than", "at", "with", "where",
    "when", "whose", "got", "on", "average", "mean", "sum", "also", "currently", "current", "recent",
    "ones", "one", "things", "items", "item", "stuff", "change", "changed", "changes", "evolve", "evolved",
    "trend", "trends", "develop", "developed", "chart", "charts", "plot", "graph", "visualize", "visualise",
    "visualization", "draw", "create", "make", "bar", "line", "pie", "histogram",
    # verbs that only carry a measure or a place the question names beside them: "weigh over 6,000 grams",
    # "cover more than 5,000 miles", "fly out of LaGuardia", "live on Biscoe"
    "weigh", "weighs", "weighed", "cover", "covers", "covered", "fly", "flies", "flying", "live", "lives",
    "living", "lived", "anything", "happen", "happens", "occur", "occurs", "leave", "leaves",
    # "destinations served from LGA", "species found on Torgersen", "destinations that received at least 100
    # flights": the rows' being at the place named
    "serve", "serves", "served", "found", "receive", "receives", "received",
    # "which airport sits at the highest altitude": the rows' being where their measure puts them ("sit" is left
    # out: as written it may be a code, Sitka's SIT)
    "sits", "sitting", "located", "situated", "lies",
    # a condition's preface: "restricted to destinations that …", "limited to the Adelies"
    "restricted", "restrict", "limited", "limit",
    # words for the data as a whole and its rows' being in it: "how many flights does the sample contain",
    # "how many Chinstrap penguins were sampled", "among the penguins whose …"
    "sample", "sampled", "contain", "contains", "contained", "appear", "appears", "appeared", "among", "considering",
    # the rows' doing what they are counted or summed for: "operate any flight", "which dates racked up the most
    # delay minutes", "accumulated the most distance"
    "operate", "operates", "operating", "racked", "rack", "accumulated", "accumulate", "amassed", "tallied",
    # emphasis: "only the flights that actually departed"
    "actually", "really", "truly",
    # the asker and how to lay the answer out: "I'd like to see LaGuardia and JFK next to each other", "put the
    # average on Biscoe beside the one on Dream" (the guard reads "next" only as "next to")
    "id", "im", "put", "set", "next", "beside", "alongside", "side", "answer",
})
"""Words that do not name anything in the data and need not: the unknown-word check skips them."""
_ADJECTIVE_SUFFIXES = ("y", "ny", "gy", "ese", "an", "ean", "ian", "n", "ish", "ern")

_MEANINGFUL_LOCAL = frozenset({"more", "most", "after", "before", "above", "below", "under", "over", "each",
                               "between", "than", "from", "by", "per", "all", "during", "until", "not", "no",
                               "only", "other", "same", "up", "down"})

_AGG_WORDS_PLAIN = frozenset({"average", "total", "mean", "sum", "count"})

_GENERIC_PARTS = frozenset({"max", "min", "avg", "total", "sum", "count", "number", "in", "per", "of", "lbs",
                            "change", "value", "id", "name", "type", "and"})

_TIME_HIGH = frozenset({"latest", "newest", "youngest", "recent", "recently", "last"})
_TIME_LOW = frozenset({"earliest", "oldest", "first"})
"""Superlatives of time: the latest row or date is the greatest, the oldest the least. "recent" and "first"
/"last" count only as "most recent" and "the first"/"the last" (else "first 5" is a ranking)."""

_SHARE_WORDS = frozenset({"share", "percentage", "percent", "proportion", "portion", "fraction", "ratio", "%"})
_SHARE_VERBS = frozenset({"were", "are", "was", "is", "had", "have", "has", "did", "do", "does", "came",
                          "come", "got", "that", "which", "who", "with", "went", "left", "flew", "arrived",
                          "departed", "landed", "ended", "became", "made", "happened", "occurred", "fell",
                          # verbs of a measure: "what proportion of female penguins weigh more than 4,000 g"
                          "weigh", "weighed", "weighs", "measure", "measured", "measures",
                          # participles: "percent of JetBlue flights arriving more than 15 min late"
                          "arriving", "departing", "leaving", "landing", "flying", "going", "having", "weighing"})
""""What share of orders were returned": the share's condition comes after one of these."""

_PARTING = frozenset(",:;()—–")
"""Punctuation between two words that parts what they name."""


def parting(gap: str) -> bool:
    """Whether the characters between two words part what they name: a comma, a colon, a parenthesis, a dash
    ("flights - date, carrier": not "origin-destination", a hyphen within a word)."""
    return bool(_PARTING.intersection(gap)) or "-" in gap and gap != gap.strip()


_DIMENSIONS: dict[str, tuple[tuple[str, ...], bool]] = {
    "long": (("length",), True), "short": (("length",), False), "deep": (("depth",), True),
    "shallow": (("depth",), False), "wide": (("width",), True), "narrow": (("width",), False),
    "tall": (("height",), True), "heavy": (("mass", "weight"), True), "light": (("mass", "weight"), False),
    "fast": (("speed",), True), "slow": (("speed",), False), "far": (("distance",), True),
    "expensive": (("price", "cost"), True), "cheap": (("price", "cost"), False),
}
"""Adjectives of measure and the column words they measure ("longer" → a length, "heaviest" → a mass), with
whether more of the adjective is more of the column."""
_IRREGULAR_DIMENSIONS = {"farther": "far", "further": "far", "farthest": "far", "furthest": "far",
                         "more expensive": "expensive", "most expensive": "expensive"}
_TIE_WORDS = frozenset({"tie", "ties", "tied"})
AUXILIARIES = frozenset({"is", "are", "was", "were", "does", "do", "did", "has", "have", "had"})
"""Verbs that open a clause of their own ("did any flight …", "which destinations did LaGuardia serve")."""
_TIE_FILLER = frozenset({"counting", "count", "include", "including", "includes", "with", "allow", "keep",
                         "keeping", "if", "there", "is", "a", "any", "show", "all", "of", "them", "list"})

_TOWARD = frozenset({"to", "into", "at", "toward", "towards", "landed", "land", "lands", "landing", "arrive", "arrived",
                     "arrives", "arriving", "arrival", "arrivals", "received", "receive", "receives", "receiving",
                     "destination", "destinations", "heading", "headed", "bound", "inbound", "reached", "reaching"})
_AWAY = frozenset({"from", "out", "leaving", "left", "leave", "leaves", "depart", "departed", "departing", "departs",
                   "departure", "departures", "origin", "origins", "originated", "originating", "originate",
                   "originates", "outbound"})
"""Words of a question that reach the rows of another table as where a row goes (``_TOWARD``) or comes from."""
_DIRECTION_PREPOSITIONS = frozenset({"to", "into", "at", "toward", "towards", "from", "out"})
"""Words of direction that point only forward ("to San Francisco"), where a verb may follow what it points at
("the airport that received")."""

KINDS: dict[str, frozenset[str]] = {
    "bird": frozenset({"penguin", "gull", "owl", "duck", "goose", "eagle", "sparrow", "parrot", "chicken", "hen",
                       "pigeon", "swan", "heron", "puffin", "albatross"}),
    "animal": frozenset({"penguin", "bird", "dog", "cat", "cow", "horse", "sheep", "pig", "goat", "fish", "whale",
                         "seal", "mouse", "rat", "bear", "deer", "fox", "wolf"}),
    "aircraft": frozenset({"plane", "airplane", "aeroplane", "jet", "airliner", "helicopter"}),
    "vehicle": frozenset({"car", "truck", "bus", "van", "bike", "bicycle", "motorcycle", "lorry", "taxi", "cab"}),
}
"""Everyday names of a kind for the things of it a table's rows may be ("birds" for penguins): the word for the
kind names the rows as their own noun does."""

SAME_DOING: tuple[frozenset[str], ...] = (
    frozenset({"manufactur", "built", "build", "produc", "construct"}),
    frozenset({"observ", "seen", "see", "spot", "spotted"}),
    frozenset({"left", "leav"}),  # "flights leaving EWR" of the airport "the flight left from"
)
"""Stems of verbs that say the same of a row ("the year it was built" of a year the plane "was manufactured")."""


def said_otherwise(words: set[str]) -> set[str]:
    """``words`` (stems) with the stems of the verbs that say the same as one of them."""
    return words.union(*(group for group in SAME_DOING if group & words))

ROLE_NOUNS = {"departure": "away", "departures": "away", "origin": "away", "origins": "away",
              "arrival": "toward", "arrivals": "toward", "destination": "toward", "destinations": "toward"}
"""Nouns of the role a place plays for a row, with the end of the trip it is ("away": where the row leaves from)."""

LEAVE_OUT = frozenset({"leaving", "leave", "left", "leaves", "keeping", "keep", "ruling", "rule"})
"""Verbs that with "out" right before a value exclude it ("leaving out JFK", "ruling out Dream"); "out of JFK"
says where from."""

LEAVE_OR_ARRIVE = frozenset({"leave", "left", "depart", "departed", "arrive", "arrived", "land", "landed"})
"""Verbs of leaving or reaching a place a time of day or a date is said of ("first leave", "scheduled to leave
first")."""
