package com.spectrayan.spector.cli;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The layering of DESIGN.md section 2 over every module's production classes (this module sees
 * them all): no Spring or Reactor Netty anywhere, each core module depends only on the modules its
 * row names, and no module reaches into another's {@code internal} package.
 */
final class ArchitectureTest {
    private static final String ROOT = "com.spectrayan.spector";
    private static final List<String> MODULES =
            List.of("contract", "cluster", "uplink", "gateway", "worker", "owner", "cli");

    private static JavaClasses classes;

    @BeforeAll
    static void importClasses() {
        classes = new ClassFileImporter()
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages(ROOT);
    }

    @Test
    void imported_theModulesThatHaveCode() {
        for (String module : List.of("contract", "cluster", "cli")) {
            assertThat(classes.stream()
                            .filter(c -> c.getPackageName().startsWith(ROOT + "." + module))
                            .count())
                    .as("classes of %s imported (a rule over no class proves nothing)", module)
                    .isPositive();
        }
    }

    @Test
    void noModule_dependsOnSpringOrReactorNetty() {
        noClasses()
                .that()
                .resideInAPackage(ROOT + "..")
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage("org.springframework..", "reactor.netty..")
                .because("DESIGN.md section 2: the product is built on Netty directly")
                .check(classes);
    }

    @Test
    void contract_dependsOnNoOtherModule() {
        moduleMayNotUse("contract", "cluster", "uplink", "gateway", "worker", "owner", "cli");
        noClasses()
                .that()
                .resideInAPackage(ROOT + ".contract..")
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage("io.netty..", "io.lettuce..", "com.github.benmanes..")
                .because("the contract depends on Jackson only")
                .check(classes);
    }

    @Test
    void cluster_dependsOnlyOnTheContract() {
        moduleMayNotUse("cluster", "uplink", "gateway", "worker", "owner", "cli");
    }

    @Test
    void uplink_ownerAndWorker_stayOutOfTheProcessesAboveThem() {
        moduleMayNotUse("uplink", "gateway", "worker", "owner", "cli");
        moduleMayNotUse("owner", "uplink", "gateway", "worker", "cli");
        moduleMayNotUse("worker", "gateway", "owner", "cli");
        moduleMayNotUse("gateway", "worker", "owner", "cli");
    }

    @Test
    void internalPackages_areUsedOnlyByTheirOwnModule() {
        for (String module : MODULES) {
            noClasses()
                    .that()
                    .resideOutsideOfPackage(ROOT + "." + module + "..")
                    .should()
                    .dependOnClassesThat()
                    .resideInAPackage(ROOT + "." + module + "..internal..")
                    .allowEmptyShould(true)
                    .because("a module's internals may change at any time")
                    .check(classes);
        }
    }

    private static void moduleMayNotUse(String module, String... others) {
        String[] packages = new String[others.length];
        for (int i = 0; i < others.length; i++) {
            packages[i] = ROOT + "." + others[i] + "..";
        }
        noClasses()
                .that()
                .resideInAPackage(ROOT + "." + module + "..")
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage(packages)
                .because("DESIGN.md section 2 draws " + module + "'s dependencies")
                .allowEmptyShould(true) // modules filled by later issues hold no classes yet
                .check(classes);
    }
}
