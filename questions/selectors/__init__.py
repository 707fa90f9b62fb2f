"""Reads that span models, shaped for the pages (one query per list, no N+1), a module per page:

    sets            the set list and a set's page: states, versions, labels and their fetch log
    runs            a run's report, tally and counts; two runs set against each other
    review          the review queue and page: baseline, evidence, comparisons
    scorecard       per version and question: pass rates, controls, cost
    labels          the labelling page: which states to label next, what was answered
    disputes        the disputes page: labels that disagree, settlements, ambiguous counts
    agreement       per question: the labellers' agreement, each labeller and the model against
                    the settled answers, the states settled, disputed and ambiguous
    control_reports control and drift runs: their report sections and summaries
    advice          the advice curves of a version
    comparison      the comparison grid (comparison_formats: its JSON, CSV and terminal forms)

The export document is `questions.exports`'s.
"""
