"""The papers ocokit reproduces and the baselines' papers, by name: one table, and ``cite`` for people.

Inside ocokit the five reproduced papers have short ids, ``"000"`` to ``"004"`` (an experiment's ``paper`` field
reads ``"003 Fig. 1"``). What a user sees names the paper instead: ``cite("003 Fig. 1")`` gives
``"Wang, Yan and Liu, AAAI 2025, Fig. 1"``. ``PAPERS`` holds the five, ``BASELINES`` the papers of the baselines
they compare against; each entry has its authors, title, venue, year, a link where one is known, and its BibTeX.
"""

from __future__ import annotations

import dataclasses
import re

__all__ = ["BASELINES", "PAPERS", "Paper", "cite", "lookup"]


@dataclasses.dataclass(frozen=True)
class Paper:
    """A paper: ``authors`` in full ("Given Family"), ``venue`` as people cite it ("AAAI", "arXiv"), ``year``.

    ``venue_full`` is the BibTeX ``booktitle`` or ``journal`` (``kind`` says which entry type); ``url`` is
    a link to the paper (``None`` where none is recorded).
    """

    key: str
    authors: tuple[str, ...]
    title: str
    venue: str
    year: int
    url: str | None = None
    kind: str = "inproceedings"
    venue_full: str = ""
    note: str = ""

    @property
    def short_authors(self) -> str:
        """Family names: "Wan and Zhang", "Wang, Yan and Liu"; four or more authors: "Ye et al."."""
        families = [_family(a) for a in self.authors]
        if len(families) >= 4:
            return f"{families[0]} et al."
        if len(families) == 1:
            return families[0]
        return ", ".join(families[:-1]) + " and " + families[-1]

    @property
    def short(self) -> str:
        """``"Wang, Yan and Liu, AAAI 2025"``: how a table, a header or a figure title names the paper."""
        return f"{self.short_authors}, {self.venue} {self.year}"

    def reference(self) -> str:
        """One line for a reference list: authors, title, venue and year, and the link."""
        text = f"{', '.join(self.authors)}. {self.title}. {self.venue_full or self.venue} {self.year}."
        return text + (f" {self.url}" if self.url else "")

    def bibtex(self) -> str:
        """The paper's BibTeX entry, keyed ``familyYEARfirstword`` (e.g. ``wang2025doubly``)."""
        first = re.sub(r"[^a-z]", "", self.title.split()[0].lower())
        key = f"{re.sub(r'[^a-z]', '', _family(self.authors[0]).lower())}{self.year}{first}"
        fields = [("title", "{" + self.title + "}"), ("author", " and ".join(self.authors))]
        if self.kind == "inproceedings":
            fields.append(("booktitle", self.venue_full or self.venue))
        elif self.kind == "article":
            fields.append(("journal", self.venue_full or self.venue))
        else:
            fields.append(("howpublished", self.venue_full or self.venue))
        fields.append(("year", str(self.year)))
        if self.url:
            fields.append(("url", self.url))
        if self.note:
            fields.append(("note", self.note))
        body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields)
        return f"@{self.kind}{{{key},\n{body}\n}}"


def _family(name: str) -> str:
    return name.split()[-1]


PAPERS: dict[str, Paper] = {
    "000": Paper(
        "000",
        ("Yibo Wang", "Yuanyu Wan", "Lijun Zhang"),
        "Revisiting Projection-Free Online Learning with Time-Varying Constraints",
        "AAAI",
        2025,
        "https://arxiv.org/abs/2501.16919",
        venue_full="Proceedings of the AAAI Conference on Artificial Intelligence",
    ),
    "001": Paper(
        "001",
        ("Yuanyu Wan", "Lijun Zhang"),
        "Projection-free Online Learning over Strongly Convex Sets",
        "AAAI",
        2021,
        "https://arxiv.org/abs/2010.08177",
        venue_full="Proceedings of the AAAI Conference on Artificial Intelligence",
    ),
    "002": Paper(
        "002",
        ("Lintao Ye", "Zhengmiao Wang", "Zhi-Wei Liu", "Ming Chi", "Xiaoling Wang", "Housheng Su"),
        "Online Convex Optimization with Memory and Limited Predictions",
        "arXiv",
        2024,
        "https://arxiv.org/abs/2410.23574",
        kind="misc",
        venue_full="arXiv:2410.23574",
        note="version 1 (ocokit follows it; a later revision reorders the authors)",
    ),
    "003": Paper(
        "003",
        ("Juncheng Wang", "Bingjie Yan", "Yituo Liu"),
        "Doubly-Bounded Queue for Constrained Online Learning: Keeping Pace with Dynamics of Both Loss and Constraint",
        "AAAI",
        2025,
        None,
        venue_full="Proceedings of the AAAI Conference on Artificial Intelligence",
    ),
    "004": Paper(
        "004",
        ("Shuang Qiu", "Xiaohan Wei"),
        "Beyond O(sqrt(T)) Regret for Constrained Online Optimization: Gradual Variations and Mirror Prox",
        "arXiv",
        2020,
        "https://arxiv.org/abs/2006.12455",
        kind="misc",
        venue_full="arXiv:2006.12455",
    ),
}
"""The five papers ocokit reproduces, by their ids ``"000"``-``"004"``."""

BASELINES: dict[str, Paper] = {
    "LOOBOGD": Paper(
        "LOOBOGD",
        ("Dan Garber", "Ben Kretzu"),
        "New Projection-free Algorithms for Online Convex Optimization with Adaptive Regret Guarantees",
        "COLT",
        2022,
        "https://proceedings.mlr.press/v178/",
        venue_full="Proceedings of the Conference on Learning Theory (PMLR 178)",
    ),
    "LPM": Paper(
        "LPM",
        ("Dan Garber", "Ben Kretzu"),
        "Projection-Free Online Convex Optimization with Time-Varying Constraints",
        "ICML",
        2024,
        "https://arxiv.org/abs/2402.08799",
        venue_full="Proceedings of the International Conference on Machine Learning (PMLR 235)",
    ),
    "OPDP": Paper(
        "OPDP",
        ("Duksang Lee", "Nam Ho-Nguyen", "Dabeen Lee"),
        "Projection-Free Online Convex Optimization with Stochastic Constraints",
        "arXiv",
        2023,
        "https://arxiv.org/abs/2305.01333",
        kind="misc",
        venue_full="arXiv:2305.01333",
    ),
    "RECOO": Paper(
        "RECOO",
        ("Hengquan Guo", "Xin Liu", "Honghao Wei", "Lei Ying"),
        "Online Convex Optimization with Hard Constraints: Towards the Best of Two Worlds and Beyond",
        "NeurIPS",
        2022,
        venue_full="Advances in Neural Information Processing Systems",
    ),
    "Yi2021": Paper(
        "Yi2021",
        ("Xinlei Yi", "Xiuxian Li", "Tao Yang", "Lihua Xie", "Tianyou Chai", "Karl H. Johansson"),
        "Regret and Cumulative Constraint Violation Analysis for Online Convex Optimization with Long Term Constraints",
        "ICML",
        2021,
        venue_full="Proceedings of the International Conference on Machine Learning (PMLR 139)",
    ),
    "Yi2023": Paper(
        "Yi2023",
        ("Xinlei Yi", "Xiuxian Li", "Tao Yang", "Lihua Xie", "Tianyou Chai", "Karl H. Johansson"),
        "Regret and Cumulative Constraint Violation Analysis for Distributed Online Constrained Convex Optimization",
        "IEEE TAC",
        2023,
        kind="article",
        venue_full="IEEE Transactions on Automatic Control 68(5)",
    ),
    "YuNeelyWei": Paper(
        "YuNeelyWei",
        ("Hao Yu", "Michael J. Neely", "Xiaohan Wei"),
        "Online Convex Optimization with Stochastic Constraints",
        "NeurIPS",
        2017,
        venue_full="Advances in Neural Information Processing Systems",
    ),
    "OFW": Paper(
        "OFW",
        ("Elad Hazan", "Satyen Kale"),
        "Projection-free Online Learning",
        "ICML",
        2012,
        venue_full="Proceedings of the International Conference on Machine Learning",
    ),
    "OGD": Paper(
        "OGD",
        ("Martin Zinkevich",),
        "Online Convex Programming and Generalized Infinitesimal Gradient Ascent",
        "ICML",
        2003,
        venue_full="Proceedings of the International Conference on Machine Learning",
    ),
    "Hedge": Paper(
        "Hedge",
        ("Jyrki Kivinen", "Manfred K. Warmuth"),
        "Exponentiated Gradient versus Gradient Descent for Linear Predictors",
        "Information and Computation",
        1997,
        kind="article",
        venue_full="Information and Computation 132(1)",
    ),
}
"""The baselines' papers, by the ocokit learner that follows each (LOOBBGD and LBPM share LOOBOGD's and LPM's)."""


def lookup(paper_id: str) -> Paper:
    """The paper of an id: ``"000"``-``"004"`` or a baseline's learner name; ``ValueError`` listing the valid ids."""
    if paper_id in PAPERS:
        return PAPERS[paper_id]
    if paper_id in BASELINES:
        return BASELINES[paper_id]
    raise ValueError(f"unknown paper {paper_id!r}; valid: {', '.join([*PAPERS, *BASELINES])}")


_ID = re.compile(r"^\s*(\d{3})\b\s*(.*)$", re.DOTALL)


def cite(paper: str) -> str:
    """An experiment's ``paper`` field as people read it: the paper's id replaced by its authors, venue and year.

    ``"003 Fig. 1"`` gives ``"Wang, Yan and Liu, AAAI 2025, Fig. 1"``, ``"004 Thms 4.1-4.2"`` gives
    ``"Qiu and Wei, arXiv 2020, Thms 4.1-4.2"``, a bare ``"001"`` gives ``"Wan and Zhang, AAAI 2021"``, and a
    parenthesis stays a parenthesis: ``"001 (no experiments)"`` gives ``"Wan and Zhang, AAAI 2021 (no
    experiments)"``. Text that does not start with a known id is returned unchanged. Use it wherever a user
    reads the field: run headers, ``ocokit list``, figure titles.
    """
    match = _ID.match(paper)
    if match is None or match.group(1) not in PAPERS:
        return paper
    name, rest = PAPERS[match.group(1)].short, match.group(2).strip()
    if not rest:
        return name
    return f"{name} {rest}" if rest.startswith("(") else f"{name}, {rest}"
