"""Reads JUnit files as CI does: validates each against junit-10.xsd with
`xmlschema` (raising on the first violation), then reads it with
`junitparser` (the stand-in for GitLab's and GitHub's readers) and prints
what it read as JSON. Usage: junit-read.py JUNIT_10_XSD FILE... (tests/it/junit.rs)
"""

import json
import sys

import xmlschema
from junitparser import JUnitXml

schema = xmlschema.XMLSchema(sys.argv[1])
read = []
for path in sys.argv[2:]:
    schema.validate(path)
    report = JUnitXml.fromfile(path)
    suites = []
    for suite in report:
        cases = []
        for case in suite:
            cases.append({
                "name": case.name,
                "classname": case.classname,
                "time": case.time,
                "results": [
                    {"kind": result._tag, "message": result.message, "text": result.text}
                    for result in case.result
                ],
                "systemOut": case.system_out,
            })
        suites.append({
            "name": suite.name,
            "tests": suite.tests,
            "failures": suite.failures,
            "errors": suite.errors,
            "skipped": suite.skipped,
            "properties": [[p.name, p.value] for p in suite.properties()],
            "cases": cases,
        })
    read.append({"tests": report.tests, "failures": report.failures,
                 "errors": report.errors, "suites": suites})
json.dump(read, sys.stdout)
