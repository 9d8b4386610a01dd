"""`coursepack review`: the manual half of grading, over one grading folder (docs/review.md).

store.py     gradebook.sqlite: students, scores, comments, vetoes (versioned), the log
sync.py      the gradebook filled from what `coursepack grade` wrote; regrade.md
record.py    what `coursepack grade` calls at its end (auto.json, carry-over, sync)
totals.py    each student's total and pass, through generator/grade/rubric.py's rule
exports.py   grades.csv with totals; Canvas, Moodle, otter, nbgrader files
sheet.py     export-sheet / import-sheet
feedback.py  the students' feedback pages with the manual grading
render.py    students' Markdown as sanitized HTML (nh3)
codeview.py  the code against the exercise file; the vetoes proposed from evidence
app.py       the Flask application; command.py the command line; texts.py + ui.yaml its words"""
