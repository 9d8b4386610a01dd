"""The course bundle: one zip per locale and edition with an index and every published lesson,
each in its own folder, rendered so that previous/next links between the folders work."""

from __future__ import annotations

import jinja2

from generator.html import lesson_html, page_labels
from generator.loader import CourseContent
from generator.markdown import check_markdown
from generator.pack import Edition, Pack, manifest
from generator.render import RenderError


def index_markdown(content: CourseContent, locale: str, edition: Edition, env: jinja2.Environment) -> str:
    ui = content.locales[locale]
    lessons = []
    for entry in content.course.lessons:
        published = entry.status == "published"
        goal = content.lessons[entry.id].texts[locale].goal.strip() if published else ""
        lessons.append({"heading": ui.heading(entry.id, entry.number), "goal": " ".join(goal.split()),
                        "href": f"{entry.id}/lesson.md" if published else None})
    return env.get_template("pack/course_index.md.j2").render(
        ui=ui, lessons=lessons, edition_name=ui.pack.edition_answer if edition == "answer" else ui.pack.edition_exercise)


def bundle_pack(content: CourseContent, locale: str, edition: Edition, lessons: dict[str, Pack],
                env: jinja2.Environment, verified: dict[str, str]) -> Pack:
    """lessons: each published lesson's final pack, rendered for the bundle; verified: a word per
    lesson for the bundle's manifest (each lesson folder's own manifest has its full record)."""
    files = {f"{lesson_id}/{name}": data for lesson_id, pack in lessons.items() for name, data in pack.files.items()}
    index = index_markdown(content, locale, edition, env)
    problems = check_markdown(index, set(files), f"{content.course.id}-{locale}-{edition}/README.md")
    if problems:
        raise RenderError("\n".join(problems))
    files["README.md"] = index.encode()
    ui = content.locales[locale]   # the index as a page too: its links lead to the lessons' pages
    files["index.html"] = lesson_html(index, lang=locale, title=ui.course_title, env=env, bench=None,
                                      labels=page_labels(ui, None))
    bundle = Pack(content.course.id, locale, edition, files)
    bundle.files["manifest.json"] = manifest(bundle, {"lessons": verified})
    return bundle
