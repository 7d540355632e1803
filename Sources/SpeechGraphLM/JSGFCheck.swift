import Foundation
import SpeechGraphCore

/// Checks a JSGF grammar file before PocketSphinx reads it: the JSGF that PocketSphinx's parser takes (a
/// `#JSGF` header, `grammar`, `import` and rule declarations, alternatives with weights, optional and grouped
/// parts, `*` and `+`, tags; a quoted token, which PocketSphinx looks up as one word with its quotes, is an
/// error), and rule references that name a rule. PocketSphinx's own
/// parser writes what its scanner does not recognise to standard output (where a graph's results go), says
/// where it failed only in its log, and takes a grammar whose rule references name nothing, recognising
/// nothing then; this gives each problem as a `file:line:col: error:` instead.
public enum JSGFCheck {
    /// Throws a `GraphError` with every problem found, located in `path`.
    public static func check(file path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            let fm = FileManager.default
            let reason =
                !fm.fileExists(atPath: path)
                ? "no such file" : fm.isDirectory(path) ? "it is a directory" : PathNames.unreadableReason(path)
            throw GraphError(Diagnostic.error("cannot read grammar \(path): \(reason)", at: nil))
        }
        guard let text = String(data: data, encoding: .utf8), !text.contains("\0") else {
            let at = SourceLocation.firstInvalidUTF8(in: data, file: path)
            throw GraphError(
                Diagnostic.error(
                    "not a JSGF grammar: not UTF-8 text"
                        + (at == nil ? " (it holds NUL bytes)" : ": a byte here is not UTF-8"),
                    at: at ?? SourceLocation(file: path, line: 1, column: 1))
            )
        }
        try check(text, file: path)
    }

    /// The words a grammar file's rules say, and those of the grammars it imports, each where it is (a quoted
    /// token's words at its place), in order; empty when the file cannot be read. For naming the words a
    /// dictionary lacks.
    public static func words(file path: String) -> [(text: String, location: SourceLocation)] {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8)
        else { return [] }
        return Grammars(text, file: path).parsers.flatMap(\.words)
    }

    /// Checks grammar text; `file` names it in the diagnostics, and its directory is where the grammars it imports
    /// are looked for (or `JSGF_PATH`, as PocketSphinx does).
    public static func check(_ text: String, file: String) throws {
        try Grammars(text, file: file).diagnostics.throwIfErrors()
    }

    /// A grammar and every grammar it imports, directly or not, read as PocketSphinx reads them: `import
    /// <a.b.rule>` (or `<a.b.*>`) loads `a/b.gram` from the directories of `JSGF_PATH` (separated by ':') when it
    /// is set, otherwise from the directory of the first grammar, and makes the public rule `<rule>` (or every
    /// public rule) of grammar `a.b` known in the importing grammar by its short name; `<a.b.rule>` names it from
    /// anywhere. PocketSphinx says nothing when an import finds no file or no rule: it recognises nothing then.
    struct Grammars {
        /// The first grammar's parser, then those of the grammars it imports, in the order they were found.
        var parsers: [Parser] = []
        var diagnostics = DiagnosticList()

        init(_ text: String, file: String) {
            let searchPath: [String] =
                ProcessInfo.processInfo.environment["JSGF_PATH"].map {
                    $0.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
                } ?? [
                    (file as NSString).deletingLastPathComponent.isEmpty
                        ? "." : (file as NSString).deletingLastPathComponent
                ]
            var first = Parser(text: Lexer.scalars(normalizingLineEnds: text), file: file)
            first.parse()
            parsers = [first]
            /// Parsers by the path they were read from.
            var byPath: [String: Int] = [file: 0]
            // Each grammar's imports, in turn: a grammar imported twice is read once.
            var next = 0
            /// The short names each grammar's imports make known.
            var imported: [Set<String>] = [[]]
            while next < parsers.count {
                for (name, location) in parsers[next].imports {
                    let inner = name.dropFirst().dropLast()
                    guard let dot = inner.lastIndex(of: ".") else {
                        parsers[next].diagnostics.error(
                            "cannot import \(name): an imported rule is named with its grammar, as <grammar.rule> or "
                                + "<grammar.*>", at: location)
                        continue
                    }
                    let package = String(inner[..<dot])
                    let rule = String(inner[inner.index(after: dot)...])
                    let relative = package.replacingOccurrences(of: ".", with: "/") + ".gram"
                    let candidates = searchPath.map { $0 + "/" + relative }
                    guard let path = candidates.first(where: { FileManager.default.isReadableFile(atPath: $0) })
                    else {
                        let places = searchPath.map { "'\($0)'" }.joined(separator: ", ")
                        parsers[next].diagnostics.error(
                            "cannot import \(name): no grammar file \(relative) in \(places) (PocketSphinx looks in "
                                + "the first grammar's directory, or in those of JSGF_PATH when it is set)",
                            at: location)
                        continue
                    }
                    let index: Int
                    if let known = byPath[path] {
                        index = known
                    } else {
                        guard let data = FileManager.default.contents(atPath: path),
                            let text = String(data: data, encoding: .utf8)
                        else {
                            parsers[next].diagnostics.error(
                                "cannot import \(name): \(path) is not UTF-8 text", at: location)
                            continue
                        }
                        var parser = Parser(text: Lexer.scalars(normalizingLineEnds: text), file: path)
                        parser.parse()
                        index = parsers.count
                        byPath[path] = index
                        parsers.append(parser)
                        imported.append([])
                    }
                    let target = parsers[index]
                    if target.diagnostics.hasErrors {
                        // Said in that file; what it names counts as imported, so that its errors are not said again
                        // here as rules not defined.
                        imported[next].formUnion(rule == "*" ? target.publicRules : ["<\(rule)>"])
                        continue
                    }
                    guard target.grammarName == package else {
                        parsers[next].diagnostics.error(
                            "cannot import \(name): \(path) "
                                + (target.grammarName.map { "calls its grammar '\($0)'" } ?? "names no grammar")
                                + ", so PocketSphinx finds no rule of grammar '\(package)' in it (write 'grammar "
                                + "\(package);' there)", at: location)
                        continue
                    }
                    let rules = rule == "*" ? target.publicRules : target.publicRules.filter { $0 == "<\(rule)>" }
                    guard !rules.isEmpty else {
                        let what =
                            rule == "*"
                            ? "has no public rule"
                            : target.defined["<\(rule)>"] == nil
                                ? "has no rule <\(rule)>" : "does not make rule <\(rule)> public"
                        parsers[next].diagnostics.error("cannot import \(name): \(path) \(what)", at: location)
                        continue
                    }
                    imported[next].formUnion(rules)
                }
                next += 1
            }
            // Every grammar's rules by their full name (<grammar.rule>): any grammar read may name them so.
            var qualified = Set<String>()
            for p in parsers {
                guard let g = p.grammarName else { continue }
                for rule in p.defined.keys { qualified.insert("<\(g).\(rule.dropFirst())") }
            }
            for (k, p) in parsers.enumerated() {
                diagnostics.append(contentsOf: p.diagnostics.all)
                for (name, location) in p.referenced
                where p.defined[name] == nil && !imported[k].contains(name) && !qualified.contains(name)
                    && !["<NULL>", "<VOID>"].contains(name)
                {
                    diagnostics.error(
                        name.contains(".")
                            ? "rule \(name) is not defined: no grammar read (this one or one it imports) defines it"
                            : "rule \(name) is not defined in this grammar"
                                + (imported[k].isEmpty ? "" : " or imported into it"), at: location)
                }
            }
            if !parsers[0].hasPublic && !diagnostics.hasErrors {
                diagnostics.error(
                    "the grammar has no public rule: a recognizer decodes with its first public rule",
                    at: SourceLocation(file: file, line: 1, column: 1))
            }
        }
    }

}
