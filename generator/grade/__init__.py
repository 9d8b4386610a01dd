"""`coursepack grade`: a class's submissions of one lesson through the trusted checker, in the
sandbox, on the instructor's runner; a gradebook, feedback per student in their language,
Gradescope results and a class summary. One job per module:

  lesson.py      the lesson's check.py in every language, rendered from the content, and its texts
  collect.py     what students handed in (LMS export layouts, zips, notebooks, reports) -> submissions
  roster.py      the optional roster: names, languages, other ids
  tasks.py       units of distinct code, the results cache, job folders, harvesting results
  rows.py        one row per student: status, points, flags
  answers.py     each student's answers to the rubric's manual parts, from notebooks and reports -> answers.json
  rubric.py      rubric.json (parts, points, texts, vetoes) and totals(): the total and the pass rule
  gradebook.py   grades.csv
  feedback.py    feedback/<student>.md and .html
  gradescope.py  gradescope/<student>/results.json, and the autograder container's paths
  summary.py     summary.md and .html: distribution, pass rates, reasons, declared mistakes
  pages.py       Markdown pages rendered as HTML
  run.py         the pipeline (grade, grade_in_container)
The job that runs on the runner is generator/checker/jobs/grade_job.py."""
