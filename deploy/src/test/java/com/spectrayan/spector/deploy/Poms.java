package com.spectrayan.spector.deploy;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.parsers.ParserConfigurationException;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.xml.sax.SAXException;

/**
 * The reactor's own modules and how they depend on each other, read from the module poms: what
 * {@code dependency:copy-dependencies -DincludeScope=runtime} puts beside a module's jar, as far as
 * our modules go (compile and runtime scope, followed transitively; test and provided left out).
 */
final class Poms {
    static final String GROUP = "com.spectrayan.spector";

    private Poms() {}

    /** Returns the modules the root pom lists. */
    static List<String> modules() {
        Element root = read("pom.xml");
        List<String> modules = new ArrayList<>();
        for (Element list : children(root, "modules")) {
            for (Element m : children(list, "module")) {
                modules.add(m.getTextContent().strip());
            }
        }
        return modules;
    }

    /** Returns a module's runtime closure of our modules, the module itself first. */
    static Set<String> runtimeClosure(String module) {
        Set<String> closure = new LinkedHashSet<>();
        visit(module, closure);
        return closure;
    }

    private static void visit(String module, Set<String> closure) {
        if (!closure.add(module)) {
            return;
        }
        for (String dependency : runtimeDependencies(module)) {
            visit(dependency, closure);
        }
    }

    /** Returns the artifact ids of our modules a module depends on at compile or runtime scope. */
    static List<String> runtimeDependencies(String module) {
        return runtimeDependencies(module, GROUP);
    }

    /** Returns the artifact ids of {@code group} a module depends on at compile or runtime scope. */
    static List<String> runtimeDependencies(String module, String group) {
        Element project = read(module + "/pom.xml");
        List<String> deps = new ArrayList<>();
        for (Element list : children(project, "dependencies")) {
            for (Element d : children(list, "dependency")) {
                String scope = text(d, "scope", "compile");
                boolean optional = text(d, "optional", "false").equals("true");
                if (text(d, "groupId", "").equals(group)
                        && (scope.equals("compile") || scope.equals("runtime"))
                        && !optional) {
                    deps.add(text(d, "artifactId", ""));
                }
            }
        }
        return deps;
    }

    private static String text(Element parent, String child, String fallback) {
        List<Element> found = children(parent, child);
        return found.isEmpty() ? fallback : found.get(0).getTextContent().strip();
    }

    private static List<Element> children(Element parent, String name) {
        List<Element> out = new ArrayList<>();
        for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element e && e.getTagName().equals(name)) {
                out.add(e);
            }
        }
        return out;
    }

    private static Element read(String relativePath) {
        try {
            DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
            factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
            Document doc = factory.newDocumentBuilder()
                    .parse(Repo.root().resolve(relativePath).toFile());
            return doc.getDocumentElement();
        } catch (IOException | SAXException | ParserConfigurationException e) {
            throw new IllegalStateException("cannot read " + relativePath, e);
        }
    }
}
